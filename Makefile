# tokenmap: every set-up step lives here, so a fresh clone needs only
# `make demo` or `make test`. A second run with everything in place takes seconds.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.tokenmap-installed
# The decoding engine: a CTranslate2 fork with a decoder-step API. faster-whisper
# pulls in stock ctranslate2, which writes the same package, so the fork is
# re-installed last (see docs/ENGINE.md).
ENGINE := ctranslate2-crisperwhisper==4.7.1.post3

.PHONY: help demo test lint setup engine stock-encoder packing rowmath models tools bench-data bench-wer bench-teacher bench-learn bench bench-quick bench-report bench-stock bench-map bench-map-wer bench-hour shapes bench-sizes clean

help:
	@echo "make demo        install everything needed, then transcribe a bundled recording"
	@echo "make test        install everything needed, then run the linter and the test suite"
	@echo "make lint        ruff (configured in pyproject.toml)"
	@echo "make engine      re-install the CTranslate2 fork (if stock ctranslate2 shadowed it)"
	@echo "make stock-encoder  stock CTranslate2 for the encoder worker (stock faster-whisper's encoder)"
	@echo "make bench-data  install TTS voices and real speech, build the benchmark test sets"
	@echo "make bench-wer   real speech in it, ru, cs, nl, ro; WER of the full against the short audio context"
	@echo "make bench-teacher  the model's transcripts of the dev audio, for map mode taught"
	@echo "make bench-learn the model's transcripts of the train split's 8 kHz prompts, and recall indexes"
	@echo "make bench-quick the quick benchmark on real speech in five languages (about 10 minutes on 2 cores)"
	@echo "make bench       the full benchmark: its tables into results/kept/, then docs/BENCHMARKS.md"
	@echo "make bench-report  write docs/BENCHMARKS.md from the kept results (results/kept/)"
	@echo "make bench-map   map against no map file by file, every set, both audio contexts, and a 3 min file (~40 min)"
	@echo "make bench-map-wer  WER with each language's prompt inventory against without a map, held-out prompts (~10 min)"
	@echo "make bench-hour  an hour of real speech through transcribe: memory over time, RTF (3-9 minutes on 2 cores)"
	@echo "make shapes      random-weight models of the shapes of small, medium, large-v3, turbo (~/.cache/tokenmap/shapes)"
	@echo "make bench-sizes calibrate the shapes, time their encoders on each engine, project S and end to end per size (~40 min)"
	@echo "make clean       remove the virtual environment"

setup: $(STAMP) models stock-encoder packing rowmath

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --disable-pip-version-check --upgrade pip
	$(PIP) install -q --disable-pip-version-check -e '.[engine,models,quantize,bench,test]'
	$(MAKE) --no-print-directory engine
	touch $@

engine:
	$(PIP) install -q --disable-pip-version-check --force-reinstall --no-deps $(ENGINE)
	$(PY) -c "from tokenmap.runtime.engine import require_step_api; require_step_api()"

# Stock CTranslate2 for the encoder worker (tokenmap/runtime/stock_worker.py): the encoder stock
# faster-whisper runs, not slower than the fork's, with output equal to the fork's within 1e-4
# (bit for bit on the AMD EPYC measured; not promised on every CPU). A private directory that only the worker puts on its
# path (the fork and stock cannot share a process); installed here, never at run time.
STOCK_CT2 := $(or $(TOKENMAP_STOCK_CT2),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tokenmap/stock-ct2)
stock-encoder: $(STOCK_CT2)/ctranslate2/__init__.py
$(STOCK_CT2)/ctranslate2/__init__.py: | $(STAMP)
	$(PIP) install -q --disable-pip-version-check --no-deps --target $(STOCK_CT2) ctranslate2==4.8.5

# Packed GEMM for the fork's decoder on Intel CPUs (tokenmap/runtime/packing.py): a 20-line library of
# tokenmap's own, built with the system's C++ compiler; without one, the fork decodes unpacked.
CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)
PACKING := $(CACHE)/tokenmap/native/libtokenmap_packing.so
packing: $(PACKING)
$(PACKING): tokenmap/runtime/native/decoder_packing.cc
	@mkdir -p $(dir $@)
	@if command -v $(CXX) >/dev/null 2>&1; then $(CXX) -O2 -shared -fPIC -o $@ $<; \
	else echo "no C++ compiler ($(CXX)): the fork's decoder runs without packed GEMM"; fi

# The decoding loop's row reductions (tokenmap/runtime/nativelib.py): log-softmax shifts and CTranslate2-order
# sums in C, about five times numpy's speed on a vocabulary row; without a C compiler numpy computes them.
ROWMATH := $(CACHE)/tokenmap/native/libtokenmap_rowmath.so
rowmath: $(ROWMATH)
$(ROWMATH): tokenmap/runtime/native/row_math.c
	@mkdir -p $(dir $@)
	@if command -v $(CC) >/dev/null 2>&1; then $(CC) -O3 -ffp-contract=off -shared -fPIC -o $@ $< -lm; \
	else echo "no C compiler ($(CC)): the decoding loop's row sums run in numpy"; fi

models: $(STAMP)
	$(BIN)/tokenmap models prepare base tiny.en

# Command-line tools the tests use to make audio variants (sox).
tools:
	@command -v sox >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq sox libsox-fmt-base; }

# The suite, then every test marked `model` again as on each lower CPU kind this CPU can stand in for
# (tests/capped_isa.py: oneDNN and CTranslate2 capped to AVX2, or to AVX-512 BF16 below AMX; process-mechanics files left out).
test: setup tools lint
	$(PY) -m pytest
	$(PY) tests/capped_isa.py

# ruff (configured in pyproject.toml): pyflakes, pycodestyle and sorted imports
lint: $(STAMP)
	$(BIN)/ruff check .

# Random-weight CTranslate2 models of the real Whisper shapes, to measure what each size costs.
shapes: $(STAMP)
	$(PY) benchmarks/model_shapes.py

# The main job: compile a domain corpus into a token map, then transcribe real recordings with it and
# a short audio context. Two maps: the prompt list's train split (these three prompts' text is not in
# it), and the whole prompt list, as an IVR's operator has it (their text is; no map hears any audio).
DEMO_MAP := demo-out/telephony-en.tmap
DEMO_INVENTORY := demo-out/telephony-en-inventory.tmap
DEMO_AUDIO := tests/data/en-vm-record-prepend.flac tests/data/en-ss-noservice.flac tests/data/en-agent-pass.flac
$(DEMO_MAP): corpora/telephony/en/train.txt | setup
	$(BIN)/tokenmap build corpora/telephony/en/train.txt -o $@ --force
$(DEMO_INVENTORY): corpora/telephony/en/train.txt corpora/telephony/en/test.txt | setup
	$(BIN)/tokenmap build corpora/telephony/en/train.txt corpora/telephony/en/test.txt -o $@ --force

demo: setup $(DEMO_MAP) $(DEMO_INVENTORY)
	$(BIN)/tokenmap inspect $(DEMO_MAP) --prefix "Please enter your"
	@echo "== held-out prompts: the map never saw their text"
	$(BIN)/tokenmap transcribe --language en --map $(DEMO_MAP) --audio-context auto $(DEMO_AUDIO)
	@echo "== the same recordings, with a map of the whole prompt list (their text, never their audio)"
	$(BIN)/tokenmap transcribe --language en --map $(DEMO_INVENTORY) --audio-context auto $(DEMO_AUDIO)

# Benchmark data: Debian TTS voices and real speech, PyPI piper voice; audio is
# generated into bench-data/ (gitignored), never committed.
BENCH_DEBS := flite espeak-ng sox libsox-fmt-base pocketsphinx-testdata \
	asterisk-core-sounds-en asterisk-core-sounds-es asterisk-core-sounds-fr asterisk-core-sounds-it asterisk-core-sounds-ru \
	asterisk-core-sounds-en-g722 asterisk-core-sounds-es-g722 asterisk-core-sounds-fr-g722 \
	asterisk-core-sounds-it-g722 asterisk-core-sounds-ru-g722 \
	asterisk-core-sounds-en-wav asterisk-core-sounds-es-wav asterisk-core-sounds-fr-wav

bench-data: setup
	@dpkg -s $(BENCH_DEBS) >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq $(BENCH_DEBS); }
	$(PIP) install -q --disable-pip-version-check -e '.[tts]'
	$(MAKE) --no-print-directory engine
	$(PY) benchmarks/make_data.py
	$(PY) benchmarks/subsets.py

# Real speech in it, ru, cs, nl, ro for the short audio context's WER (benchmarks/WER_SETS.md):
# Debian packages, built into bench-data/wer/ (never committed).
WER_DEBS := asterisk-core-sounds-it asterisk-core-sounds-it-g722 asterisk-core-sounds-ru asterisk-core-sounds-ru-g722 \
	fillets-ng-data fillets-ng-data-cs fillets-ng-data-nl tuxpaint-stamps-default sox
bench-wer: setup
	@dpkg -s $(WER_DEBS) >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq $(WER_DEBS); }
	$(PY) benchmarks/wer_sets.py
	$(PY) benchmarks/wer_table.py --split test --json results/wer/test.json

# Stock faster-whisper on stock CTranslate2, the user's real alternative, in its own venv.
STOCK := .venv-stock
bench-stock: $(STOCK)/.installed
$(STOCK)/.installed:
	$(PYTHON) -m venv $(STOCK)
	$(STOCK)/bin/pip install -q --disable-pip-version-check faster-whisper==1.2.1 ctranslate2==4.8.5
	touch $@

# The quick benchmark's comparisons (map, plain greedy, distil-spec, oracle, fairness before and after --balance,
# end to end against tuned stock), kept for docs/BENCHMARKS.md under the CPU kind KIND names.
KIND ?= $(shell $(PY) benchmarks/report.py kind)
KIND_SLUG ?= $(shell $(PY) benchmarks/report.py kind --slug)
ENCODER_AUTO ?= $(shell $(BIN)/tokenmap doctor 2>/dev/null | sed -n 's/^encoder  *//p' | cut -d' ' -f1-3)
KEEP = $(PY) benchmarks/report.py keep "$$(ls -td results/2*/ | head -1)results.json" --section "$(KIND)" \
	--encoder-auto "$(ENCODER_AUTO)"
bench-quick: bench-data bench-stock
	$(BIN)/tokenmap bench --quick --map-mode per-task,balanced --heavy-per-group 2
	$(KEEP) --order 100 --prefix $(KIND_SLUG)-quick --tables e2e,decoder,tasks,fairness
	$(MAKE) --no-print-directory bench-report

# docs/BENCHMARKS.md from results/kept/ (results/kept/README.md: the schema); byte for byte on a clean checkout.
bench-report:
	$(PY) benchmarks/report.py

# Teacher transcripts (`build --balance --teacher`): plain greedy Whisper on the dev audio,
# which no benchmark run decodes; sentences the measured sets also speak are dropped.
TEACHER := bench-data/teacher.jsonl
bench-teacher: $(TEACHER)
$(TEACHER): benchmarks/dev_manifest.py benchmarks/teacher_texts.py | bench-data
	$(PY) benchmarks/dev_manifest.py
	$(BIN)/tokenmap bench --manifest bench-data/dev.jsonl --systems greedy --reps 1 --out results/dev
	$(PY) benchmarks/teacher_texts.py "$$(ls -td results/dev/2*/ | head -1)results.json" -o $@

# The model's transcripts of the 8 kHz recordings of the train split's prompts (never the measured
# test split, whose 16 kHz files are the same studio takes): what system tokenmap-learned learns from.
# The same pass records two recall indexes: the train split's prompts (tokenmap-recall) and the whole
# inventory, measured prompts included (tokenmap-recall-inventory, reported under that label).
LEARN := bench-data/teacher-train.jsonl
RECALL := bench-data/recall-train.trec
RECALL_INVENTORY := bench-data/recall-inventory.trec
bench-learn: $(LEARN)
$(LEARN): benchmarks/telephone_teacher.py | bench-data
	$(PY) benchmarks/telephone_teacher.py -o $@ --recall $(RECALL) --recall-inventory $(RECALL_INVENTORY)

bench: bench-data bench-stock bench-learn
	$(BIN)/tokenmap calibrate --reps 15
	$(BIN)/tokenmap calibrate --exact --reps 15
	$(BIN)/tokenmap bench --map-mode per-task,balanced,inferred --learn $(LEARN) --recall $(RECALL) \
		--recall-inventory $(RECALL_INVENTORY) \
		--heavy-per-group 2 --reps-open 15
	$(KEEP) --order 200 --prefix $(KIND_SLUG)-full
	$(MAKE) --no-print-directory bench-report

# Map against no map, file by file, on every set and at both audio contexts (docs/BENCHMARKS.md, "Map
# against no map, file by file"): the right domain's map, then a wrong one; each file's rows in results/map/.
PROFILE := $(PY) benchmarks/window_profile.py --contexts full,auto --reps 1
#: the English prompt inventory's map (the 3 min file plays its prompts, recordings it never saw)
MAP_EN := results/e2e/maps/telephony-en.tmap
bench-map: bench-data
	$(BIN)/tokenmap calibrate --reps 15
	@mkdir -p results/map
	$(PROFILE) --set telephony --stride 3 --json results/map/prompts.json
	$(PROFILE) --set synthetic --json results/map/commands.json
	$(PROFILE) --set calls --json results/map/calls.json
	$(PROFILE) --set opendomain --json results/map/librivox.json
	$(PY) benchmarks/oracle_maps.py results/map/calls.json results/map/prompts.json --out results/map/oracle-maps
	$(PROFILE) --set calls --maps results/map/oracle-maps --json results/map/calls-oracle.json
	$(PROFILE) --set telephony --stride 3 --maps results/map/oracle-maps --json results/map/prompts-oracle.json
	$(PROFILE) --set telephony --stride 3 --map-of maintenance-en --json results/map/prompts-wrong-map.json
	$(PROFILE) --set dictation --map-of telephony-en --contexts full --json results/map/dictation-wrong-map.json
	$(PROFILE) --set dictation --map-of telephony-en --contexts full --session \
		--json results/map/dictation-wrong-map-session.json
	$(PY) benchmarks/long_bench.py --minutes 3 --reps 3 --map $(MAP_EN) \
		--systems tokenmap-seq,tokenmap-seq-map,tokenmap-batch8,tokenmap-batch8-map --json results/map/long.json
	$(PY) benchmarks/map_keep.py --section "$(KIND)" --encoder-auto "$(ENCODER_AUTO)" \
		--out results/kept/$(KIND_SLUG)-45-map.json
	$(MAKE) --no-print-directory bench-report

# The default's WER with each language's prompt inventory against without a map, on the held-out prompts of
# the short-context sets (make bench-wer builds them; WER_MANIFEST names another build); bench-map notes it.
WER_MANIFEST ?= bench-data/wer/manifest.jsonl
WER_MAP := $(PY) benchmarks/wer_table.py --manifest $(WER_MANIFEST) --split test --contexts full --vad off \
	--sets asterisk-en,asterisk-es,asterisk-fr,asterisk-it,asterisk-ru
bench-map-wer: setup
	@test -f $(WER_MANIFEST) || $(MAKE) --no-print-directory bench-wer
	@mkdir -p results/map
	for l in en es fr it ru; do $(BIN)/tokenmap build --force corpora/telephony/$$l/train.txt \
		corpora/telephony/$$l/test.txt -o results/map/inventory-$$l.tmap; done
	$(WER_MAP) --json results/map/wer-nomap.json
	$(WER_MAP) $(foreach l,en es fr it ru,--map $(l)=results/map/inventory-$(l).tmap) --json results/map/wer-map.json

# An hour of Asterisk prompts and LibriVox clips (built into the user's cache, never committed), transcribed
# as `tokenmap transcribe --map` does, with resident memory sampled while it runs (benchmarks/hour_bench.py).
bench-hour: bench-data
	$(PY) benchmarks/hour_bench.py

# Projected speed of each Whisper size: the shapes' curves and encoder costs, and base's greedy tokens
# and end-to-end times (benchmarks/model_projection.py says how). Writes results/sizes/projection.md.
SIZES := small medium large-v3-turbo large-v3
SHAPES_DIR := $(HOME)/.cache/tokenmap/shapes
bench-sizes: shapes bench-data bench-stock
	for m in $(SIZES); do $(BIN)/tokenmap calibrate --model $(SHAPES_DIR)/$$m --reps 5 && \
		$(BIN)/tokenmap calibrate --model $(SHAPES_DIR)/$$m --exact --reps 5 || exit 1; done
	$(PY) benchmarks/model_costs.py base $(SIZES) --reps 5 --encoder-reps 3 --encoder-seconds 5,6,8,12,20,30 \
		--json results/sizes/costs.json --md results/sizes/costs.md
	$(PY) benchmarks/encoder_bench.py $(addprefix $(SHAPES_DIR)/,small medium large-v3) --frames 3000,1000 --reps 3 \
		--no-stock --json results/sizes/encoders.json
	$(BIN)/tokenmap bench --manifest bench-data/e2e-all.jsonl --systems e2e,stock --reps 1 --e2e-reps 3 --out results/sizes/e2e
	$(BIN)/tokenmap bench --manifest bench-data/e2e-all.jsonl --systems tokenmap --reps 3 --out results/sizes/ts
	$(BIN)/tokenmap bench --manifest bench-data/e2e-all.jsonl --systems tokenmap --no-timestamps --reps 3 \
		--out results/sizes/nots
	$(PY) benchmarks/model_projection.py $$(ls -d results/sizes/e2e/2*/ | tail -1)results.json \
		--decoder-run $$(ls -d results/sizes/ts/2*/ | tail -1)results.json \
		--no-timestamps-run $$(ls -d results/sizes/nots/2*/ | tail -1)results.json \
		--costs results/sizes/costs.json --md results/sizes/projection.md

clean:
	rm -rf $(VENV) $(STOCK)
