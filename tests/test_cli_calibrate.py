"""`tokenmap calibrate`: its default thread count is the one `tokenmap transcribe` runs with."""

from click.testing import CliRunner

from tokenmap_cli.main import cli


class _Measured(Exception):
    pass


def test_calibrate_defaults_to_transcribes_threads(monkeypatch):
    import tokenmap.decode.calibration as calibration
    import tokenmap.runtime.engine as engine
    import tokenmap.transcriber as transcriber
    import tokenmap_cli.cmd_calibrate as cmd

    assert transcriber.default_threads is engine.default_threads  # what `transcribe` falls back on
    seen = []

    def measure(model_dir, compute_type, threads, *args, **kwargs):
        seen.append(threads)
        raise _Measured("stopped after the thread count")

    monkeypatch.setattr(engine, "default_threads", lambda: 3)
    monkeypatch.setattr(calibration, "calibrate", measure)
    monkeypatch.setattr(cmd, "_calibrate_encoders", lambda model_dir, compute_type, threads, reps: seen.append(threads))
    result = CliRunner().invoke(cli, ["calibrate"])
    assert result.exit_code == 1 and "stopped after the thread count" in result.stderr
    assert CliRunner().invoke(cli, ["calibrate", "--encoder"]).exit_code == 0
    assert CliRunner().invoke(cli, ["calibrate", "--threads", "2"]).exit_code == 1
    assert seen == [3, 3, 2]
