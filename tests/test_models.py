"""Packaged-model assembly: found, verified, atomic, and clear when it fails."""

import hashlib

import pytest

from tokenmap import models
from tokenmap.models import ModelError, PackagedModel, assemble, resolve_model


@pytest.fixture
def fake_packages(tmp_path, monkeypatch):
    """Two importable packages holding a split 'model.bin' plus config files."""
    site = tmp_path / "site"
    payload = b"A" * 1000 + b"B" * 777
    for pkg, content in (("fakepart1", payload[:1000]), ("fakepart2", payload[1000:])):
        d = site / pkg / "data"
        d.mkdir(parents=True)
        (site / pkg / "__init__.py").write_text("")
        (d / "model.bin.part").write_bytes(content)
    (site / "fakepart1" / "data" / "config.json").write_text("{}")
    monkeypatch.syspath_prepend(str(site))
    spec = PackagedModel(
        name="fake",
        parts=(("fakepart1", "data/model.bin.part"), ("fakepart2", "data/model.bin.part")),
        files=(("fakepart1", "data/config.json"),),
        size=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
        licence="test",
    )
    return spec, payload


def test_assemble_concatenates_and_verifies(fake_packages, tmp_path):
    spec, payload = fake_packages
    target = assemble(spec, root=tmp_path / "cache")
    assert (target / "model.bin").read_bytes() == payload
    assert (target / "config.json").is_file()
    # a second call reuses the verified directory
    mtime = (target / "model.bin").stat().st_mtime_ns
    assert assemble(spec, root=tmp_path / "cache") == target
    assert (target / "model.bin").stat().st_mtime_ns == mtime


def test_bad_checksum_leaves_nothing_behind(fake_packages, tmp_path):
    spec, _ = fake_packages
    bad = PackagedModel(**{**spec.__dict__, "sha256": "0" * 64})
    with pytest.raises(ModelError, match="does not verify"):
        assemble(bad, root=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_interrupted_assembly_is_redone(fake_packages, tmp_path):
    spec, payload = fake_packages
    target = tmp_path / "cache" / "fake"
    target.mkdir(parents=True)
    (target / "model.bin").write_bytes(payload[:10])  # a half-written model, no marker
    assert (assemble(spec, root=tmp_path / "cache") / "model.bin").read_bytes() == payload


def test_missing_package_names_the_fix(tmp_path):
    spec = PackagedModel("x", (("no_such_pkg_xyz", "a"),), (), 1, "0" * 64, "")
    with pytest.raises(ModelError, match=r"pip install -e \.\[models\]"):
        assemble(spec, root=tmp_path)


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert models.cache_dir() == tmp_path / "tokenmap" / "models"


def test_resolve_directory_and_errors(tmp_path, base_model_dir):
    assert resolve_model(base_model_dir) == base_model_dir
    with pytest.raises(ModelError, match="not a CTranslate2 Whisper model directory"):
        resolve_model(tmp_path)


def test_unknown_name_offline_is_one_clear_line():
    # HF_HUB_OFFLINE=1 (conftest): the hub client fails without any network access
    with pytest.raises(ModelError) as err:
        resolve_model("small")
    message = str(err.value)
    assert "offline" in message and "\n" not in message


def test_packaged_models_are_real(base_model_dir, tiny_model_dir):
    for d in (base_model_dir, tiny_model_dir):
        assert (d / "model.bin").stat().st_size == models.PACKAGED[d.name].size
        assert (d / "tokenizer.json").is_file()
