"""What the form and the API ask of jobgauge, in one place.

The service owns the store and the current model.  On first use it loads the
newest model from the store; if there is none it trains the default model
from the run tables shipped in ``data/runs`` and saves it to the store, so a
fresh machine answers without any set-up.
"""

from __future__ import annotations

import threading
from pathlib import Path

from jobgauge.errors import UsageError

REPO_ROOT = Path(__file__).resolve().parent.parent
TPCH_SCALES = (0.1, 0.3, 1.0, 3.0)


def default_runs_dir() -> Path:
    return REPO_ROOT / "data" / "runs"


class Service:
    def __init__(self, *, store_url=None, runs_dir=None, model_name="default", tune_trials=60):
        self.store_url = store_url
        self.runs_dir = Path(runs_dir) if runs_dir else default_runs_dir()
        self.model_name = model_name
        self.tune_trials = tune_trials
        self._store = None
        self._model = None
        self._meta = None
        self._lock = threading.Lock()

    @property
    def store(self):
        if self._store is None:
            from jobgauge.store import open_store

            self._store = open_store(self.store_url)
        return self._store

    def ensure_model(self, progress=None):
        """The current model, loading or (on a fresh store) training it once."""
        with self._lock:
            if self._model is not None:
                return self._model, self._meta
            from jobgauge.errors import StoreError
            from jobgauge.models import loads_model

            try:
                meta, payload = self.store.load_model(self.model_name)
                self._model, self._meta = loads_model(payload), meta
            except StoreError:
                self._model, self._meta = self._train_from_shipped_runs(progress)
            return self._model, self._meta

    def _train_from_shipped_runs(self, progress=None):
        from jobgauge.models import DEFAULT_MODEL, dumps_model, make_model
        from jobgauge.runtable import read_run_tables

        files = sorted(self.runs_dir.glob("*.csv.gz")) + sorted(self.runs_dir.glob("*.csv"))
        if not files:
            raise UsageError(f"no trained model in the store and no run tables in {self.runs_dir} "
                             "to train one from; run 'jobgauge train'")
        if progress is not None:
            print(f"no model in the store yet: training {DEFAULT_MODEL} from "
                  f"{len(files)} run tables in {self.runs_dir} ...", file=progress, flush=True)
        frame = read_run_tables(files)
        model = make_model(DEFAULT_MODEL).fit(frame)
        metrics = {"trained_on_runs": int(len(frame)), "files": [f.name for f in files]}
        self.store.save_model(self.model_name, DEFAULT_MODEL, dumps_model(model), metrics)
        meta, _ = self.store.load_model(self.model_name)
        return model, meta

    # -- questions -----------------------------------------------------------
    def estimate(self, *, workload: str, datasize: str, config: dict, master: str = "local[2]"):
        from jobgauge.models import predict_one
        from jobgauge.profiler.runner import local_cores

        model, meta = self.ensure_model()
        cores = local_cores(master)
        result = predict_one(model, workload=workload, datasize=datasize, config=config,
                             framework="spark", instance_type=f"local[{cores}]",
                             instance_count=1, vcpus=cores, memory_gib=None)
        result["model"] = {"name": meta["name"], "kind": meta["kind"], "id": meta["id"]}
        return result

    def tune(self, *, workload: str, datasize: str, trials: int | None = None, seed: int = 0):
        from jobgauge.tuner import tune_with_model

        model, _ = self.ensure_model()
        return tune_with_model(model, workload=workload, datasize=datasize,
                               trials=trials or self.tune_trials, seed=seed)
