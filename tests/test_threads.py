"""The engine threads' wait policy: set before CTranslate2 loads, never over the user's choice."""

import os
import subprocess
import sys

from tokenmap.runtime import threads
from tokenmap.runtime.threads import POLICY, apply_wait_policy


def test_applied_on_a_clean_environment():
    env = {"PATH": "/bin"}
    assert apply_wait_policy(env, modules={}) == "applied"
    assert env == {"PATH": "/bin", **POLICY}


def test_a_users_setting_is_kept():
    for name in POLICY:
        env = {name: "42"}
        assert apply_wait_policy(env, modules={}) == "user"
        assert env == {name: "42"}


def test_opt_out_and_too_late():
    env = {threads.OPT_OUT: "default"}
    assert apply_wait_policy(env, modules={}) == "off"
    assert set(env) == {threads.OPT_OUT}
    env = {}
    assert apply_wait_policy(env, modules={"ctranslate2": object()}) == "late"
    assert env == {}


def _child_env(script: str, extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in POLICY and k != threads.OPT_OUT}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return dict(line.split("=", 1) for line in out.stdout.split())


def test_importing_tokenmap_sets_it_before_ctranslate2_loads():
    script = ("import os, sys, tokenmap, tokenmap.runtime.threads as t; import ctranslate2; "
              "print('status=' + t.status); print('policy=' + os.environ.get('OMP_WAIT_POLICY', '-'))")
    assert _child_env(script, {}) == {"status": "applied", "policy": "ACTIVE"}
    late = "import ctranslate2, os, tokenmap.runtime.threads as t; print('status=' + t.status)"
    assert _child_env(late, {}) == {"status": "late"}
    assert _child_env(script, {threads.OPT_OUT: "default"}) == {"status": "off", "policy": "-"}


def test_a_late_policy_is_warned_about_once(monkeypatch, caplog):
    monkeypatch.setattr(threads, "status", "late")
    monkeypatch.setattr(threads, "_warned", False)
    with caplog.at_level("WARNING", logger="tokenmap"):
        assert threads.warn_if_late() is True
        assert threads.warn_if_late() is False
    assert len(caplog.records) == 1 and "import tokenmap first" in caplog.records[0].getMessage()
    monkeypatch.setattr(threads, "status", "applied")
    monkeypatch.setattr(threads, "_warned", False)
    assert threads.warn_if_late() is False
