from tokenmap_cli.main import cli

cli(prog_name="tokenmap")
