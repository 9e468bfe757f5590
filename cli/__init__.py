"""The `tokenmap` command line (import name ``tokenmap_cli``)."""
