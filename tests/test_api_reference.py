"""The public API: the names ``jaket`` exports import from ``jaket`` (lazily: ``import jaket`` stays
light), ``jaket.pipeline(...)`` is callable, and the API reference (docs/api, ``make docs``) builds
with warnings as errors and documents every exported name."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import jaket

REPO = Path(__file__).resolve().parents[1]


def test_every_public_name_imports_from_jaket():
    for name in jaket.__all__:
        assert getattr(jaket, name) is not None, name
    assert {"pipeline", "JaketModel", "JaketConfig", "KnowledgeGraph", "load_kg", "load_finetuned",
            "ContextLinker", "EntityLinker", "encode_texts"} <= set(jaket.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        jaket.nothing_here  # noqa: B018


def test_import_jaket_loads_no_torch():
    code = "import sys, jaket; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_jaket_pipeline_is_the_pipeline_function(tmp_path):
    from jaket.pipelines import pipeline

    assert jaket.pipeline is pipeline  # a plain function, from a module of another name (as transformers)
    module = importlib.import_module("jaket.pipelines")  # importing its module leaves the name the function
    assert jaket.pipeline is pipeline and module.pipeline is pipeline
    # the call reaches pipeline(): an unknown task is its error, not "module is not callable"
    with pytest.raises(ValueError, match="unknown task 'no-such-task'"):
        jaket.pipeline("no-such-task", out=tmp_path / "run")


@pytest.mark.slow
def test_the_api_reference_builds_with_warnings_as_errors(tmp_path):
    out = tmp_path / "html"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          str(REPO / "docs" / "api"), str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    html = "".join(page.read_text(encoding="utf-8") for page in out.glob("*.html"))
    for name in jaket.__all__:
        if name == "__version__":
            continue
        anchor = "jaket.pipelines.pipeline" if name == "pipeline" else f"jaket.{name}"
        assert f'id="{anchor}"' in html, f"{name} is missing from the API reference"
    # the method the README's Python block calls on what jaket.pipeline returns (result.finetuned.predict)
    for task, cls in (("entity_classification", "FinetunedEntityClassifier"),
                      ("link_prediction", "FinetunedLinkPredictor"), ("kgqa", "FinetunedQuestionAnswerer"),
                      ("relation_classification", "FinetunedPairClassifier"),
                      ("word_in_context", "FinetunedWordInContext")):
        assert f'id="jaket.tasks.{task}.finetuned.{cls}.predict"' in html, f"{cls}.predict is not documented"


def test_the_public_functions_name_a_wrong_argument():
    with pytest.raises(TypeError, match=r"model=5: give a JaketModel or the path of its folder"):
        jaket.encode_texts(5, ["a text"], "my_kg")
    with pytest.raises(TypeError, match=r"kg=None: give a KnowledgeGraph or the path of its folder"):
        jaket.encode_texts("model", ["a text"], None)
    with pytest.raises(TypeError, match=r"kg=3: give a path"):
        jaket.pretrain("out", kg=3)
