"""What the form and the API ask of jobgauge, in one place.

The service owns the store and the current model.  On first use it loads the
newest model from the store; if there is none it trains one from the run
tables shipped in ``data/runs`` and saves it to the store, so a fresh machine
answers without any set-up.

Questions it answers:

- :meth:`Service.estimate`: predicted runtime (with its interval) and cost of
  a job on every instance type and node count asked about (the what-if
  grid), the option that best meets the deadline or budget, the job class
  and, for SQL, the query DAG;
- :meth:`Service.tune`: that option plus Spark SQL settings tuned by the
  model (``jobgauge.tuner.tune_with_model``), as ``spark-submit --conf`` and
  Hive ``SET`` lines;
- :meth:`Service.remaining`: time left of a running Spark application;
- runs and models in the store.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from jobgauge.errors import GaugeError, ModelError, ParseError, UsageError
from jobgauge.webapp.requests import LOCAL_TYPES, EstimateRequest, InvalidField

REPO_ROOT = Path(__file__).resolve().parent.parent
# Read-only results shared by every app of the process, keyed by the files they come from.
_SHARED_FRAMES: dict = {}
_SHARED_CLASSIFIERS: dict = {}
_SHARED_LOCK = threading.Lock()
UI_TIMEOUT_S = 15          # a Spark UI's first REST answer can take seconds on a busy driver
LOCAL_MEMORY_GIB = 1.0     # the driver heap of a local[N] run (spark.driver.memory 1g), as recorded


def default_runs_dir() -> Path:
    return REPO_ROOT / "data" / "runs"


def default_profiles_dir() -> Path:
    return REPO_ROOT / "data" / "profiles"


def default_plan_data_root() -> Path:
    return REPO_ROOT / "var" / "plan-data"


class DuplicateRun(UsageError):
    """A run with this (source, run_id) is already in the store."""


class UnknownApplication(GaugeError, LookupError):
    """No such Spark application where the user pointed."""


@dataclass(frozen=True)
class InstanceOption:
    """One choosable node type: a catalog entry, or ``local[N]`` on this machine."""

    instance_type: str
    vcpus: float
    memory_gib: float
    hourly_price_usd: float | None
    source: str

    @property
    def local(self) -> bool:
        return self.instance_type.startswith("local[")


def _finite(value):
    """JSON-safe: NaN and infinities become None; numpy scalars plain numbers."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def jsonable(value):
    """A structure with datetimes as ISO text and non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return _finite(value)


def executor_layout(option: InstanceOption, count: int) -> dict[str, str]:
    """One executor per node with all its cores and the heap that fits beside
    Spark's overhead (the layout the runtime models assume when none is given)."""
    from jobgauge.tuner._space import (
        MIN_OVERHEAD_MB, OVERHEAD_FRACTION, RESERVED_NODE_MB,
    )

    usable = option.memory_gib * 1024 - RESERVED_NODE_MB
    heap = int(min(usable / (1 + OVERHEAD_FRACTION), usable - MIN_OVERHEAD_MB))
    heap = max(512, heap // 256 * 256)
    return {"spark.executor.instances": str(int(count)),
            "spark.executor.cores": str(int(option.vcpus)),
            "spark.executor.memory": f"{heap}m"}


class Service:
    def __init__(self, *, store_url=None, runs_dir=None, profiles_dir=None, model_name="default",
                 model_kind=None, tune_trials=60, plan_data_root=None, hive_host=None,
                 hive_port=None, catalog_path=None, eventlog_dirs=()):
        self.store_url = store_url
        self.runs_dir = Path(runs_dir) if runs_dir else default_runs_dir()
        self.profiles_dir = Path(profiles_dir) if profiles_dir else default_profiles_dir()
        self.model_name = model_name
        self.model_kind = model_kind
        self.tune_trials = int(tune_trials)
        self.plan_data_root = Path(plan_data_root) if plan_data_root else default_plan_data_root()
        self.hive_host, self.hive_port = hive_host, hive_port
        self.catalog_path = catalog_path
        self.eventlog_dirs = tuple(Path(d).resolve() for d in eventlog_dirs or ())
        self._store = None
        self._model = None
        self._meta = None
        self._frame = None
        self._classifier = None
        self._options = None
        self._lock = threading.Lock()
        self._class_lock = threading.Lock()

    # -- resources ---------------------------------------------------------------
    @property
    def store(self):
        if self._store is None:
            from jobgauge.store import open_store

            self._store = open_store(self.store_url)
        return self._store

    def _run_files(self) -> list[Path]:
        return sorted(self.runs_dir.glob("*.csv.gz")) + sorted(self.runs_dir.glob("*.csv"))

    def _data_key(self) -> tuple:
        files = self._run_files() + (sorted(self.profiles_dir.glob("*.jsonl.gz"))
                                     if self.profiles_dir.is_dir() else [])
        return tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)

    def training_frame(self):
        """The shipped run tables (with their profiles' summaries where known), read once
        per process and set of files."""
        if self._frame is None:
            key = self._data_key()
            with _SHARED_LOCK:
                cached = _SHARED_FRAMES.get(key)
            if cached is None:
                from jobgauge.runtable import read_run_tables

                frame = read_run_tables(self._run_files())
                summaries = self._profile_summaries()
                frame["profile"] = [summaries.get((s, r)) for s, r in
                                    zip(frame["source"], frame["run_id"])]
                with _SHARED_LOCK:
                    cached = _SHARED_FRAMES.setdefault(key, frame)
            self._frame = cached
        return self._frame.copy()

    def _profile_summaries(self) -> dict:
        """(source, run_id) -> Profile.summary() of every profile record in profiles_dir."""
        summaries = {}
        paths = sorted(self.profiles_dir.glob("*.jsonl.gz")) if self.profiles_dir.is_dir() else []
        for path in paths:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    try:
                        item = json.loads(line)
                        summaries[(item["source"], item["run_id"])] = item["summary"]
                    except (json.JSONDecodeError, KeyError, TypeError):
                        raise ParseError("not a profile record", path=path, line=number,
                                         expected='{"source", "run_id", "summary", ...}') from None
        return summaries

    def ensure_model(self, progress=None):
        """The current model, loading or (on a fresh store) training it once."""
        with self._lock:
            if self._model is not None:
                return self._model, self._meta
            from jobgauge.models import loads_model

            from jobgauge.errors import StoreError

            try:
                meta, payload = self.store.load_model(self.model_name)
                self._model, self._meta = loads_model(payload), meta
            except StoreError:
                self._model, self._meta = self._train_from_shipped_runs(progress)
            return self._model, self._meta

    def _train_from_shipped_runs(self, progress=None):
        from jobgauge.models import DEFAULT_MODEL, dumps_model, make_model

        files = self._run_files()
        if not files:
            raise UsageError(f"no trained model in the store and no run tables in {self.runs_dir} "
                             "to train one from; run 'jobgauge train'")
        kind = self.model_kind or DEFAULT_MODEL
        if progress is not None:
            print(f"no model in the store yet: training {kind} from "
                  f"{len(files)} run tables in {self.runs_dir} ...", file=progress, flush=True)
        frame = self.training_frame().drop(columns=["profile"])
        model = make_model(kind, random_state=0).fit(frame)
        metrics = {"trained_on_runs": len(frame), "files": [f.name for f in files],
                   "instance_types": sorted(set(frame["instance_type"])),
                   "workloads": sorted(set(frame["workload"])),
                   "datasizes": sorted(set(frame["datasize"]))}
        self.store.save_model(self.model_name, kind, dumps_model(model), metrics)
        meta, _ = self.store.load_model(self.model_name)
        return model, meta

    def classifier(self):
        """A JobClassifier fitted on the shipped runs (None when they cannot teach one);
        fitted once per process and set of files."""
        with self._class_lock:
            if self._classifier is None:
                key = self._data_key()
                with _SHARED_LOCK:
                    cached = _SHARED_CLASSIFIERS.get(key)
                if cached is None:
                    from jobgauge.models import JobClassifier

                    try:
                        cached = JobClassifier(random_state=0).fit(self.training_frame())
                    except (ModelError, ParseError, ValueError):
                        cached = False  # too few runs: every job class is "unknown"
                    with _SHARED_LOCK:
                        cached = _SHARED_CLASSIFIERS.setdefault(key, cached)
                self._classifier = cached
            return self._classifier or None

    def job_class(self, request: EstimateRequest) -> str:
        classifier = self.classifier()
        if classifier is None or request.pasted:
            return "unknown"
        from jobgauge.models import configuration_frame

        frame = configuration_frame([{"workload": request.workload,
                                      "datasize": request.datasize}])
        return str(classifier.predict(frame)[0])

    def instance_options(self) -> dict[str, InstanceOption]:
        """``local[1]``, ``local[2]`` (this machine) and the tuner's instance catalog."""
        if self._options is None:
            options = {name: InstanceOption(name, float(name[6:-1]), LOCAL_MEMORY_GIB, None,
                                            "this machine") for name in LOCAL_TYPES}
            from jobgauge.tuner import load_catalog

            for item in load_catalog(self.catalog_path):
                options[item.instance_type] = InstanceOption(
                    item.instance_type, float(item.vcpus), float(item.memory_gib),
                    float(item.hourly_price_usd), item.source)
            self._options = options
        return self._options

    def known_workloads(self) -> list[str]:
        from jobgauge.profiler.workloads import workload_names

        return workload_names()

    def plans(self):
        from jobgauge.webapp._plans import plans_for

        return plans_for(hive_host=self.hive_host, hive_port=self.hive_port,
                         data_root=self.plan_data_root)

    def warm_up(self) -> threading.Thread:
        """Load the model and start the plan session in the background (a daemon thread)."""
        def work():
            self.ensure_model()
            self.classifier()
            plans = self.plans()
            if hasattr(plans, "explain"):
                try:
                    plans.explain("select 1", scale=1.0)
                except GaugeError:
                    pass  # a HiveServer2 that is down now may be up when the form asks
        thread = threading.Thread(target=work, name="jobgauge-warm-up", daemon=True)
        thread.start()
        return thread

    # -- estimates -------------------------------------------------------------------
    def dag(self, request: EstimateRequest):
        """The QueryDag of the request's SQL (None for a job that is not a query)."""
        if not request.sql:
            return None
        try:
            return self.plans().dag(request.sql, scale=request.scale or 1.0,
                                    config=request.config)
        except ParseError as exc:
            if request.pasted:
                raise InvalidField("sql", f"cannot be planned: {exc}") from None
            raise

    def estimate(self, request: EstimateRequest, *, dag=None, plan: bool = True) -> dict:
        """Predictions for every (instance type, node count) of the request.

        A pasted query (or ``include_dag``) is planned first, unless ``dag`` is
        given or ``plan`` is False; a query that cannot be planned is an
        InvalidField of ``sql``; a plan source that is down leaves ``dag`` None
        and says why in ``plan_error``."""
        from jobgauge.models import configuration_frame, predict_frame

        model, meta = self.ensure_model()
        options = self.instance_options()
        plan_error = None
        if plan and dag is None and (request.pasted or request.include_dag) and request.sql:
            try:
                dag = self.dag(request)
            except InvalidField:
                raise
            except GaugeError as exc:  # the plan source is down: the estimate still stands
                plan_error = f"no query plan: {exc}"
        dag_dict = dag.to_dict() if dag is not None else None
        items, keys = [], []
        for name in request.instance_types:
            option = options[name]
            counts = [1] if option.local else request.node_counts()
            for count in counts:
                config = dict(request.config)
                if option.local:
                    config.setdefault("spark.master", name)
                item = {"workload": request.workload, "datasize": request.datasize,
                        "config": config, "framework": "spark", "instance_type": name,
                        "instance_count": count, "vcpus": option.vcpus,
                        "memory_gib": option.memory_gib, "input_bytes": request.input_bytes,
                        "hourly_price_usd": option.hourly_price_usd}
                if dag_dict is not None:
                    item["dag"] = dag_dict
                items.append(item)
                keys.append((option, count))
        try:
            predicted = predict_frame(model, configuration_frame(items))
        except ModelError as exc:
            raise ModelError(f"the model cannot answer this question: {exc}") from None
        metrics = meta.get("metrics") or {}
        seen = set(metrics.get("instance_types") or [])
        rows = []
        for (option, count), (_, values) in zip(keys, predicted.iterrows()):
            runtime, low, high = (float(values["predicted_runtime_s"]),
                                  float(values["predicted_low_s"]),
                                  float(values["predicted_high_s"]))
            price = option.hourly_price_usd
            cost = None if price is None else runtime * count * price / 3600
            rows.append({
                "instance_type": option.instance_type, "instance_count": count,
                "vcpus": option.vcpus, "memory_gib": option.memory_gib,
                "hourly_price_usd": price, "runtime_s": runtime, "low_s": low, "high_s": high,
                "cost_usd": cost,
                "cost_low_usd": None if price is None else low * count * price / 3600,
                "cost_high_usd": None if price is None else high * count * price / 3600,
                "meets_deadline": None if request.deadline_s is None
                else runtime <= request.deadline_s,
                "within_budget": None if request.budget_usd is None
                else (cost or 0.0) <= request.budget_usd,
                "seen_in_training": (option.instance_type in seen) if seen else None,
            })
        recommended, reason = recommend(rows, request)
        return {
            "workload": request.workload, "label": request.label,
            "datasize": request.datasize, "input_bytes": request.input_bytes,
            "config": dict(request.config), "job_class": self.job_class(request),
            "workload_seen": _seen(request.workload, metrics.get("workloads")),
            "datasize_seen": _seen(request.datasize, metrics.get("datasizes")),
            "training_datasizes": metrics.get("datasizes"),
            "model": {"name": meta["name"], "kind": meta["kind"], "id": meta["id"],
                      "trained_on_runs": meta.get("metrics", {}).get("trained_on_runs")},
            "options": rows, "best_per_type": best_per_type(rows, request),
            "recommended": recommended, "recommendation": reason,
            "dag": dag, "plan_error": plan_error,
        }

    def tune(self, request: EstimateRequest, *, trials: int | None = None, seed: int = 0,
             estimate: dict | None = None) -> dict:
        """The recommended cluster with Spark SQL settings tuned by the model."""
        from jobgauge.tuner import spark_sql_space

        model, _ = self.ensure_model()
        estimate = estimate or self.estimate(request)
        best = estimate["recommended"]
        option = self.instance_options()[best["instance_type"]]
        count = int(best["instance_count"])
        fixed = {} if option.local else executor_layout(option, count)
        base_config = {**request.config, **fixed}
        if option.local:
            base_config.setdefault("spark.master", option.instance_type)
        base_row = {"source": "jobgauge-web", "workload": request.workload, "framework": "spark",
                    "datasize": request.datasize,
                    "input_bytes": math.nan if request.input_bytes is None else request.input_bytes,
                    "instance_type": option.instance_type, "instance_count": count,
                    "vcpus": option.vcpus, "memory_gib": option.memory_gib,
                    "hourly_price_usd": math.nan if option.hourly_price_usd is None
                    else option.hourly_price_usd,
                    "runtime_s": math.nan, "completed": True, "run_id": "web-tune",
                    "config": base_config}
        space = spark_sql_space()
        # The knobs the user set are kept as given; the tuner searches the others.
        space = type(space)(k for k in space if k.name not in request.config)
        n_trials = int(trials or self.tune_trials)
        if len(space):
            result = tune_knobs(model, space, base_row, n_trials=n_trials, seed=seed)
            chosen, runtime_s = result.best.config, result.best.runtime_s
            interval = result.best.runtime_interval_s or [runtime_s, runtime_s]
            baseline = next((t.runtime_s for t in result.trials if t.number == 0), None)
        else:
            chosen, runtime_s = {}, best["runtime_s"]
            interval, baseline, n_trials = [best["low_s"], best["high_s"]], best["runtime_s"], 0
        return tuned_answer(option, count, request.config, fixed, chosen, runtime_s, interval,
                            baseline, n_trials)

    # -- running applications ----------------------------------------------------------
    def _source(self, url: str) -> str:
        text = (url or "").strip()
        if not text:
            raise InvalidField("url", "give the Spark UI address (http://driver:4040), a "
                                      "History Server address, or an event log path")
        if re.match(r"^https?://", text, re.IGNORECASE):
            parts = urllib.parse.urlsplit(text)
            if not parts.hostname:
                raise InvalidField("url", f"has no host name: {text[:80]!r}")
            return text
        if re.match(r"^[a-z][a-z0-9+.-]*://", text, re.IGNORECASE):
            raise InvalidField("url", f"must be an http(s) address or an event log path; "
                                      f"got {text[:80]!r}")
        path = Path(text).resolve()
        if not any(path == d or d in path.parents for d in self.eventlog_dirs):
            allowed = ", ".join(str(d) for d in self.eventlog_dirs) or "none configured"
            raise InvalidField("url", f"event logs are read only under the configured "
                                      f"folders ({allowed}); got {text[:80]!r}")
        return str(path)

    def remaining(self, app_id: str, url: str) -> dict:
        """Progress and time left of application ``app_id`` at ``url``."""
        from jobgauge.models.remaining import remaining_seconds
        from jobgauge.profiler.live import LiveSourceError

        source = self._source(url)
        try:
            answer = remaining_seconds(source, app_id=app_id)
        except LiveSourceError as exc:
            raise UnknownApplication(str(exc)) from None
        if answer.get("app_id") and answer["app_id"] != app_id:
            raise UnknownApplication(f"{url} holds application {answer['app_id']!r}, "
                                     f"not {app_id!r}")
        return answer

    def applications(self, url: str) -> list[dict]:
        """The applications a Spark UI or History Server lists (newest first)."""
        source = self._source(url)
        if not re.match(r"^https?://", source, re.IGNORECASE):
            from jobgauge.profiler.live import LiveSourceError, read_snapshot

            try:
                snapshot = read_snapshot(source)
            except LiveSourceError as exc:
                raise UnknownApplication(str(exc)) from None
            return [{"id": snapshot.app_id, "name": snapshot.app_name,
                     "completed": snapshot.status != "running"}]
        parts = urllib.parse.urlsplit(source)
        path = parts.path.split("/api/v1", 1)[0].rstrip("/")
        listing = f"{parts.scheme}://{parts.netloc}{path}/api/v1/applications"
        try:
            with urllib.request.urlopen(urllib.request.Request(
                    listing, headers={"Accept": "application/json"}),
                    timeout=UI_TIMEOUT_S) as response:
                apps = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise UnknownApplication(f"{listing} answered HTTP {exc.code}: not a Spark UI "
                                     "or History Server") from None
        except (urllib.error.URLError, OSError) as exc:
            raise UnknownApplication(f"cannot reach a Spark UI at {listing}: "
                                     f"{getattr(exc, 'reason', exc)}") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise UnknownApplication(f"{listing} did not answer JSON: not a Spark UI") from None
        if not isinstance(apps, list):
            raise UnknownApplication(f"{listing} did not answer a list of applications")
        out = []
        for app in apps:
            if isinstance(app, dict) and app.get("id"):
                attempts = app.get("attempts") or [{}]
                out.append({"id": str(app["id"]), "name": str(app.get("name", "")),
                            "completed": bool(attempts[-1].get("completed", False))})
        return out

    # -- the store ---------------------------------------------------------------------
    def runs(self, *, limit: int, offset: int, filters: dict) -> tuple[list[dict], int]:
        store = self.store
        rows = store.runs_list(limit=limit, offset=offset, **filters)
        return [jsonable(r) for r in rows], store.count_runs(**filters)

    def add_run(self, row: dict) -> dict:
        store = self.store
        if store.has_run(row["source"], row["run_id"]):
            raise DuplicateRun(f"run {row['run_id']!r} of source {row['source']!r} is already "
                               "in the store")
        run = dict(row)
        run["status"] = "succeeded" if row["completed"] else "timed_out"
        key = store.add_run(run, row.get("config") or {})
        return jsonable(store.runs_list(limit=1, id=key)[0])

    def models(self) -> list[dict]:
        return [jsonable(m) for m in self.store.list_models()]


def tune_knobs(model, space, base_row: dict, *, n_trials: int, seed: int = 0):
    """Model-guided tuning of ``space`` on the job of ``base_row``: the engine
    defaults first, then TPE proposals; the fastest predicted runtime wins.

    This is ``jobgauge.tuner.tune_with_model`` (goal: time) built from the
    tuner's own pieces, without its closing fANOVA importance: the page does
    not show it, it costs a forest fit per request, and it fails when every
    trial predicts the same runtime (a tree model often does).
    """
    from jobgauge.tuner import (
        Goal, Objective, create_study, make_sampler, model_evaluator, run_trials,
    )

    goal = Goal("time")
    study = create_study(goal, make_sampler("tpe", seed=seed))
    study.enqueue_trial(space.defaults())
    return run_trials(study, Objective(space, model_evaluator(model, base_row), goal), n_trials)


def recommend(rows: list[dict], request: EstimateRequest) -> tuple[dict, str]:
    """The option that best meets the request, and why (in words).

    Deadline: the cheapest option whose predicted runtime meets it (this
    machine counts as free).  Budget: the fastest option within it.  Both:
    the cheapest that meets the deadline within the budget.  Neither: the
    fastest.  When no option qualifies, the closest one, and the reason says so.
    """
    def cost(row):
        return row["cost_usd"] or 0.0

    deadline, budget = request.deadline_s, request.budget_usd
    feasible = [r for r in rows if (deadline is None or r["runtime_s"] <= deadline)
                and (budget is None or cost(r) <= budget)]
    if deadline is not None:
        pool = feasible or rows
        best = min(pool, key=lambda r: (cost(r), r["runtime_s"])) if feasible \
            else min(rows, key=lambda r: (r["runtime_s"], cost(r)))
    elif budget is not None:
        best = min(feasible, key=lambda r: (r["runtime_s"], cost(r))) if feasible \
            else min(rows, key=lambda r: (cost(r), r["runtime_s"]))
    else:
        best = min(rows, key=lambda r: (r["runtime_s"], cost(r)))
    where = _where(best)
    if deadline is not None and budget is not None:
        reason = (f"cheapest option that meets the {deadline:g} s deadline within "
                  f"${budget:g}: {where}" if feasible else
                  f"no option meets the {deadline:g} s deadline within ${budget:g}; "
                  f"the fastest is {where}")
    elif deadline is not None:
        reason = (f"cheapest option that meets the {deadline:g} s deadline: {where}" if feasible
                  else f"no option meets the {deadline:g} s deadline; the fastest is {where}")
    elif budget is not None:
        reason = (f"fastest option within ${budget:g}: {where}" if feasible
                  else f"no option stays within ${budget:g}; the cheapest is {where}")
    else:
        reason = f"fastest option: {where}"
    return dict(best), reason


def best_per_type(rows: list[dict], request: EstimateRequest) -> list[dict]:
    """For each instance type, its row at the node count :func:`recommend` picks among its own."""
    out = []
    for name in dict.fromkeys(r["instance_type"] for r in rows):
        own = [r for r in rows if r["instance_type"] == name]
        out.append(recommend(own, request)[0])
    return out


def _seen(value, known) -> bool | None:
    """Whether the model's training runs include ``value`` (None: the model does not say)."""
    return None if not known else value in known


def _where(row) -> str:
    nodes = "" if row["instance_type"].startswith("local[") else f"{row['instance_count']} x "
    return f"{nodes}{row['instance_type']}"


def tuned_answer(option: InstanceOption, count: int, user_config: dict, layout: dict,
                 chosen: dict, runtime_s: float, interval, baseline, trials: int) -> dict:
    """The tuned configuration in the user's terms, with copyable lines."""
    from jobgauge.tuner import format_setting, hive_set_lines

    typed = {**{k: _typed(v) for k, v in user_config.items()}, **chosen}
    settings = {k: format_setting(k, v) for k, v in typed.items()}
    submit = [f"--master {option.instance_type}"] if option.local else []
    submit += [f"--conf {k}={v}" for k, v in {**layout, **settings}.items()
               if k.startswith("spark.") and k != "spark.master"]
    price = option.hourly_price_usd
    return {
        "instance_type": option.instance_type, "instance_count": count,
        "config": settings, "cluster_config": layout,
        "predicted_runtime_s": float(runtime_s),
        "predicted_low_s": float(interval[0]), "predicted_high_s": float(interval[1]),
        "cost_usd": None if price is None else float(runtime_s) * count * price / 3600,
        "baseline_runtime_s": None if baseline is None else float(baseline),
        "trials": trials,
        "spark_submit": submit,
        "hive_set": hive_set_lines({k: v for k, v in typed.items()
                                    if k.startswith("spark.sql.")}),
    }


def _typed(text):
    """A setting's text as the value the tuner's formatters expect (bool, int, float, str)."""
    value = str(text).strip()
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if re.fullmatch(r"-?\d+\.\d*", value):
        return float(value)
    return value
