# The two commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_DIR ?= .demo

.PHONY: demo test lint format docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: setup.py pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: setup.py pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,ctranslate2,server]'
	touch $(VENV)/.installed $@

# The embedded English->German number-words problem: no download needed.
demo: $(VENV)/.installed
	$(BIN)/t2t-trainer --registry_help
	$(BIN)/t2t-datagen --problem=translate_number_words_en_de \
		--data_dir=$(DEMO_DIR)/data --tmp_dir=$(DEMO_DIR)/tmp --show_examples=5
	$(BIN)/t2t-trainer --problem=translate_number_words_en_de --hparams_set=transformer_tiny \
		--data_dir=$(DEMO_DIR)/data --output_dir=$(DEMO_DIR)/train --train_steps=1000 \
		--eval_every_steps=500 --eval_bleu_examples=500 --save_checkpoints_steps=500 \
		--random_seed=1
	$(BIN)/t2t-decoder --output_dir=$(DEMO_DIR)/train --decode_to_file=$(DEMO_DIR)/test.decodes

# One pytest worker per core (pytest-xdist): most tests wait on tracing and
# compiling, which is single-threaded. Work stealing: a worker left idle near
# the end takes tests queued for the other instead of waiting for it.
# Property tests draw the same examples on every run (Hypothesis's ci profile,
# also plain pytest's default; tests/hypothesis_profiles.py).
test: $(VENV)/.installed-test lint
	$(BIN)/pytest -n auto --dist worksteal --durations=20 --hypothesis-profile=ci

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# docs/reference/ from the code: every flag, hparams field and registered name.
docs: $(VENV)/.installed
	$(BIN)/python docs/generate_reference.py

format: $(VENV)/.installed-test
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) $(DEMO_DIR) build *.egg-info .pytest_cache .ruff_cache .hypothesis
