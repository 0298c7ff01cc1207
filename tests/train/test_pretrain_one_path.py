"""``jaket pretrain`` is a thin layer over ``jaket.pretrain()`` (:func:`jaket.train.job.pretraining_config`
builds and checks the job for both): the same bad job gives the same message, refused before any work."""

from __future__ import annotations

import pytest

import jaket
from jaket.cli import main


def _bad_jobs(tmp_path):
    """(flags, keyword arguments, exit status) of the same bad pre-training job."""
    folder = tmp_path / "a-jaket-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "jaket.safetensors").write_bytes(b"")
    (tmp_path / "run").mkdir()
    (tmp_path / "kg.owl").write_text("<rdf/>")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("steps: -3\n")
    return [
        (["--kg", str(tmp_path / "nowhere")], {"kg": tmp_path / "nowhere"}, 1),
        (["--kg", str(tmp_path / "kg.owl")], {"kg": tmp_path / "kg.owl"}, 1),
        (["--corpus", str(tmp_path / "none.jsonl")], {"corpus": tmp_path / "none.jsonl"}, 1),
        (["--resume", "--overwrite"], {"resume": True, "overwrite": True}, 2),
        (["--encoder", str(folder)], {"encoder": folder}, 2),
        (["--config", str(bad_yaml)], {"config": bad_yaml}, 2),
    ]


def test_the_command_and_the_function_refuse_a_bad_job_alike(tmp_path, capsys, monkeypatch):
    import jaket.train.pretrain as loop

    monkeypatch.setattr(loop, "pretrain", lambda *a, **k: pytest.fail("the run started"))
    out = tmp_path / "run"
    for flags, arguments, status in _bad_jobs(tmp_path):
        capsys.readouterr()
        assert main(["pretrain", "--out", str(out), "--no-progress", *flags]) == status, flags
        said = [line.removeprefix("error: ") for line in capsys.readouterr().err.splitlines()
                if line.startswith("error: ")]
        with pytest.raises(ValueError) as raised:
            jaket.pretrain(out, progress=False, **arguments)
        assert said == str(raised.value).splitlines(), flags
        assert said and not (out / "metrics.jsonl").exists()
