"""What the form and the API ask of jobgauge, in one place.

The service is a thin facade over the rest of jobgauge.  It owns the store and
the current model.  On first use it loads the newest model from the store; if
there is none it trains one from the shipped run tables plus the store's own
runs, as the wrapper and the tuner do (``models._default.train_store_model``,
``jobgauge train``'s code and metrics layout), and saves it to the store, so a
fresh machine answers without any set-up.  A model retrained in the background
after new runs is picked up within ``MODEL_RECHECK_S``.  Every
question is a :class:`jobgauge.job.Job` (a workload on a
:class:`~jobgauge.job.Cluster`, with settings); costs, the deadline and budget
choice and the tuning are the tuner's.

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
import sys
import threading
import time
from pathlib import Path

from jobgauge.errors import GaugeError, ModelError, ParseError, UsageError
from jobgauge.job import Cluster, Job, executor_layout
from jobgauge.store import DuplicateRun  # noqa: F401 - the API maps it to 409
from jobgauge.webapp.requests import LOCAL_TYPES, EstimateRequest, InvalidField

# Read-only results shared by every app of the process, keyed by the files they come from.
_SHARED_FRAMES: dict = {}
_SHARED_CLASSIFIERS: dict = {}
_SHARED_LOCK = threading.Lock()
MODEL_RECHECK_S = 30       # how often the service looks for a retrained model in the store
JOB_CLASS_CACHE_SIZE = 4096  # (workload, datasize) pairs whose job class is kept
UI_TIMEOUT_S = 15          # a Spark UI's first REST answer can take seconds on a busy driver


def default_runs_dir() -> Path:
    """The run tables shipped in :mod:`jobgauge.data`."""
    from jobgauge.data import runs_dir

    return runs_dir()


def default_profiles_dir() -> Path:
    """The profile records shipped in :mod:`jobgauge.data`."""
    from jobgauge.data import profiles_dir

    return profiles_dir()


def default_plan_data_root() -> Path:
    """``plan-data`` in the user's jobgauge folder (beside the default store)."""
    from jobgauge.store import DEFAULT_PATH

    return DEFAULT_PATH.parent / "plan-data"


class UnknownApplication(GaugeError, LookupError):
    """No such Spark application where the user pointed."""


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
        self._store_jobs = None     # (when read, job keys)
        self._model = None
        self._meta = None
        self._model_checked = 0.0
        self._frame = None
        self._classifier = None
        self._job_classes: dict = {}
        self._options = None
        self._lock = threading.Lock()
        self._class_lock = threading.Lock()
        self._store_lock = threading.Lock()

    # -- resources ---------------------------------------------------------------
    @property
    def store(self):
        with self._store_lock:   # the first requests arrive together: open the store once
            if self._store is None:
                from jobgauge.store import open_store

                self._store = open_store(self.store_url)
        return self._store

    @property
    def loaded_model_meta(self) -> dict | None:
        """The answering model's metadata once loaded (None before): for readiness and
        metrics, which must not load or train a model themselves."""
        return self._meta

    def _run_files(self) -> list[Path]:
        """The prior's run tables: those of ``runs_dir``, and the public Scout and C3O
        tables where ``$JOBGAUGE_SHARED_DATASETS`` names their folder, as the wrapper's
        first model and the background retraining take them
        (``models._default.prior_run_tables``)."""
        from jobgauge.models._default import prior_run_tables

        return prior_run_tables(self.runs_dir)

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
        """The current model, loading or (on a fresh store) training it once.  Every
        ``MODEL_RECHECK_S`` seconds it looks for a newer model of its name in the store
        (the background retraining saves one after new runs) and answers with that."""
        with self._lock:
            if self._model is not None:
                if time.monotonic() - self._model_checked >= MODEL_RECHECK_S:
                    self._load_newer_model()
                return self._model, self._meta
            from jobgauge.models import loads_model

            from jobgauge.store import NoStoredModel

            try:  # a store that cannot be read is a StoreError here, not a reason to retrain
                meta, payload = self.store.load_model(self.model_name)
                self._model, self._meta = loads_model(payload), meta
            except NoStoredModel:
                self._model, self._meta = self._train_from_shipped_runs(progress)
            self._model_checked = time.monotonic()
            return self._model, self._meta

    def _load_newer_model(self) -> None:
        """Swap in the store's newest model of this service's name if it is newer than
        the one answering; a store that cannot be read now keeps the current one."""
        from jobgauge.models import loads_model

        self._model_checked = time.monotonic()
        try:
            newest = next((m for m in self.store.list_models() if m["name"] == self.model_name),
                          None)
            if newest is not None and newest["id"] != self._meta.get("id"):
                meta, payload = self.store.load_model(self.model_name)
                self._model, self._meta = loads_model(payload), meta
        except GaugeError:
            pass  # answered with the model already loaded; the next check tries again

    def _train_from_shipped_runs(self, progress=None):
        """Train the model kind of this service on the shipped runs plus the store's own
        and save it in the store: the wrapper's and the tuner's first-need training
        (``models._default.train_store_model``), with the run tables of ``runs_dir``
        (and the public ones, :meth:`_run_files`) as the prior."""
        from jobgauge.models import DEFAULT_MODEL
        from jobgauge.models._default import train_store_model

        files = self._run_files()
        if not files:
            raise UsageError(f"no trained model in the store and no run tables in {self.runs_dir} "
                             "to train one from; run 'jobgauge train'")
        kind = self.model_kind or DEFAULT_MODEL
        if progress is not None:
            folders = ", ".join(sorted({str(p.parent) for p in files}))
            print(f"no model in the store yet: training {kind} from "
                  f"{len(files)} run tables in {folders} ...", file=progress, flush=True)
        profile_files = sorted(self.profiles_dir.glob("*.jsonl.gz")) \
            if self.profiles_dir.is_dir() else []
        return train_store_model(self.store, name=self.model_name, kind=kind,
                                 runs_dir=self.runs_dir,   # its re-measurements' failures
                                 prior=self.training_frame().drop(columns=["profile"]),
                                 profile_files=profile_files)

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
        key = (request.workload, request.datasize)
        answer = self._job_classes.get(key)
        if answer is None:  # the class depends only on these two and the fitted classifier
            from jobgauge.models import configuration_frame

            frame = configuration_frame([{"workload": request.workload,
                                          "datasize": request.datasize}])
            answer = str(classifier.predict(frame)[0])
            if len(self._job_classes) >= JOB_CLASS_CACHE_SIZE:
                self._job_classes.clear()
            self._job_classes[key] = answer
        return answer

    def instance_options(self) -> dict[str, Cluster]:
        """One node of each choosable type: ``local[1]``, ``local[2]`` (this machine,
        ``Cluster.local_mode``) and the types of the tuner's instance catalog."""
        if self._options is None:
            options = {name: Cluster.local_mode(name) for name in LOCAL_TYPES}
            from jobgauge.tuner import load_catalog

            catalog = load_catalog(self.catalog_path)
            for name in catalog.names():
                options[name] = Cluster.from_catalog(name, catalog=catalog)
            self._options = options
        return self._options

    def known_workloads(self) -> list[str]:
        """The workloads a question may name: the TPC-H queries and HiBench jobs
        jobgauge runs, then the user's own jobs in the store (:meth:`store_jobs`)."""
        from jobgauge.profiler.workloads import workload_names

        builtin = workload_names()
        return builtin + [job for job in self.store_jobs() if job not in builtin]

    def store_jobs(self) -> list[str]:
        """The job keys of the store's runs (imported history, wrapped runs), sorted;
        read again at most every :data:`MODEL_RECHECK_S` seconds."""
        return list(self._store_frameworks())

    def _store_frameworks(self) -> dict[str, str]:
        """{job key: framework} of the store's own jobs (not jobgauge's workloads)."""
        now = time.monotonic()
        cached = self._store_jobs
        if cached is not None and now - cached[0] < MODEL_RECHECK_S:
            return cached[1]
        from jobgauge.profiler.workloads import benchmark_of

        jobs = {job: framework for job, framework in self.store.workloads().items()
                if benchmark_of(job) is None}
        self._store_jobs = (now, jobs)
        return jobs

    def plans(self):
        from jobgauge.webapp._plans import plans_for

        return plans_for(hive_host=self.hive_host, hive_port=self.hive_port,
                         data_root=self.plan_data_root)

    def warm_up(self) -> threading.Thread:
        """Load the model and start the plan session in the background (a daemon thread)."""
        def work():
            self.ensure_model()
            torch = sys.modules.get("torch")
            if torch is not None:  # one intra-op thread: requests run side by side already
                torch.set_num_threads(1)
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
        import numpy as np

        from jobgauge.job import jobs_frame
        from jobgauge.models import predict_frame
        from jobgauge.models._coverage import UnknownSize
        from jobgauge.models._default import (explain_answer, job_run_frames,
                                              option_calibrations)

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
        drawn = dag.to_dict() if hasattr(dag, "to_dict") else dag   # once, not per option
        jobs = [self.job(request, options[name], count, dag=drawn)
                for name in request.instance_types
                for count in ([1] if options[name].local else request.node_counts())]
        # an executor larger than a node: refused, not answered (once per instance type:
        # its node counts share the node)
        for job in {job.cluster.instance_type: job for job in jobs}.values():
            try:
                job.check_fits()
            except UsageError as exc:
                raise InvalidField("config", f"{exc}; ask without {job.cluster.instance_type} "
                                             f"or with smaller executors") from None
        own, failed = job_run_frames(self.store, jobs[0])
        # the job's own runs calibrate every option; without them each instance type's
        # answers take the factor of the other jobs' runs on it (its speed against the
        # machine the shipped runs came from), each type its own
        calibration, per_option = option_calibrations(self.store, model, jobs, runs=own)
        calibrated = calibration["runs"]
        factors = np.array([option["factor"] for option in per_option])
        try:
            predicted = predict_frame(model, jobs_frame(jobs), factor=factors, own_runs=own,
                                      own_failures=failed)
        except UnknownSize as exc:   # a HiBench size the model has no input size for
            raise InvalidField("size", str(exc)) from None
        except ModelError as exc:
            raise ModelError(f"the model cannot answer this question: {exc}") from None
        metrics = meta.get("metrics") or {}
        seen = _listed(metrics.get("instance_types"))
        rows = []
        for job, note, failures, table, *values in zip(jobs, predicted["measured_note"],
                                                predicted["failure_note"],
                                                predicted["answered_from_table"],
                                                *(predicted[column].to_numpy(dtype=float)
                                                  for column in
                                        ("predicted_runtime_s", "predicted_low_s",
                                         "predicted_high_s", "read_floor_s"))):
            cluster = job.cluster
            runtime, low, high, floor = map(float, values)
            cost = cluster.cost_usd(runtime)
            rows.append({
                "instance_type": cluster.instance_type, "instance_count": cluster.instance_count,
                "vcpus": cluster.vcpus, "memory_gib": cluster.memory_gib,
                "hourly_price_usd": cluster.hourly_price_usd, "runtime_s": runtime,
                "low_s": low, "high_s": high, "cost_usd": cost,
                "cost_low_usd": cluster.cost_usd(low), "cost_high_usd": cluster.cost_usd(high),
                "meets_deadline": None if request.deadline_s is None
                else runtime <= request.deadline_s,
                "within_budget": None if request.budget_usd is None
                else (cost or 0.0) <= request.budget_usd,
                "seen_in_training": (cluster.instance_type in seen) if seen else None,
                "outside_measured": note is not None, "measured_note": note,
                "measured_failures": failures,   # this configuration failed in measured runs
                # a public table's job of this name answers it: the table
                "answered_from_table": table,
                # the least time its nodes take to read the input beyond their memory
                "read_floor_s": floor if math.isfinite(floor) and floor > 0 else None,
            })
        recommended, reason = recommend(rows, request)
        chosen = next(i for i, job in enumerate(jobs)
                      if (job.cluster.instance_type, job.cluster.instance_count) ==
                      (recommended["instance_type"], recommended["instance_count"]))
        # the recommended option's calibration (a type's own where other jobs' runs gave it)
        cluster = per_option[chosen]
        factor = cluster["factor"]
        # asked for (the form always asks): where the recommended answer's time goes,
        # stage by stage (None without stages); a second replay of one option, not paid by
        # every API answer
        explanation = explain_answer(model, jobs[chosen], factor) if request.explain else None
        return {
            "workload": request.workload, "label": request.label,
            "datasize": request.datasize, "input_bytes": request.input_bytes,
            "config": dict(request.config), "job_class": self.job_class(request),
            "workload_seen": _seen(request.workload, metrics.get("workloads")),
            "datasize_seen": _seen(request.datasize, metrics.get("datasizes"))
            if request.datasize else None,      # a job of the user's asked by input size
            "training_datasizes": _listed(metrics.get("datasizes")),
            "model": {"name": meta["name"], "kind": meta["kind"], "id": meta["id"],
                      "trained_on_runs": metrics.get("training_rows")},
            "options": rows, "best_per_type": best_per_type(rows, request),
            "recommended": recommended, "recommendation": reason,
            # the headline answer is the recommended option's: is it far outside the runs?
            "outside_measured": recommended["outside_measured"],
            "measured_note": recommended["measured_note"],
            "measured_failures": recommended["measured_failures"],
            "answered_from_table": recommended["answered_from_table"],
            # a query never measured: the measured queries its answer replays (one plan,
            # the same for every option)
            "answered_from": predicted["answered_from"].iloc[0],
            "dag": dag, "plan_error": plan_error,
            "history": {"runs": calibrated, "factor": factor,
                        "busy_left_out": calibration["busy"],
                        "far_left_out": calibration["far"], "held": calibration["held"],
                        # other jobs' runs on the recommended instance type, where they
                        # calibrate it (0 and 0 where the job's own runs do, or none)
                        "cluster_runs": cluster["runs"], "cluster_jobs": cluster["jobs"]},
            "explanation": explanation,
        }

    def job(self, request: EstimateRequest, option: Cluster, count: int = 1, *,
            settings=None, dag=None) -> Job:
        """The job the request asks about on ``count`` nodes of ``option`` (on this
        machine: ``local[N]`` with the driver memory the request sets), with the
        request's settings and ``settings`` added."""
        config = {**request.config, **dict(settings or {})}
        if option.local:
            config.setdefault("spark.master", option.instance_type)
            cluster = Cluster.local_mode(option.instance_type, config)
        else:
            cluster = option.with_count(count)
        # a job of the store runs on its own framework; jobgauge's workloads on Spark
        framework = self._store_frameworks().get(request.workload, "spark")
        return Job(request.workload, request.datasize, cluster, config, framework=framework,
                   input_bytes=request.input_bytes, dag=dag, source="jobgauge-web")

    def tune(self, request: EstimateRequest, *, trials: int | None = None, seed: int = 0,
             estimate: dict | None = None) -> dict:
        """The recommended cluster with Spark SQL settings tuned by the model
        (``jobgauge.tuner.tune_with_model``, goal: time; the engine defaults are the
        first trial, then TPE proposals) and recommended as the wrapper and
        ``jobgauge tune`` recommend them (``tuner._recommend.recommend``): a change only
        inside the trust region of the runs this service's model learns from (the run
        tables of ``runs_dir`` plus the store's runs), else Spark's defaults, with the
        reason.  The tuner's closing fANOVA importance is skipped: the page does not
        show it and it costs a forest fit per request."""
        from jobgauge.models._default import job_failures
        from jobgauge.tuner import Goal, job_space, tune_with_model
        from jobgauge.tuner._modes import model_evaluator
        from jobgauge.tuner._recommend import Recommendation, recommend, store_trust_region

        model, meta = self.ensure_model()
        estimate = estimate or self.estimate(request)
        best = estimate["recommended"]
        option = self.instance_options()[best["instance_type"]]
        count = int(best["instance_count"])
        fixed = {} if option.local else executor_layout(option, count)
        space = job_space(option)
        # The knobs the user set are kept as given; the tuner searches the others.
        space = type(space)(k for k in space if k.name not in request.config)
        n_trials = int(trials or self.tune_trials)
        if len(space):
            # the estimate's plan too: a pasted query without it was priced from the data
            # set's size alone (30.9 s beside the estimate's 2.2 s on the same page)
            job = self.job(request, option, count, settings=fixed, dag=estimate.get("dag"))
            failed = job_failures(self.store, job)     # never the best (tuner._modes)
            result = tune_with_model(model, space, job, goal=Goal("time"), n_trials=n_trials,
                                     seed=seed, sampler="tpe", importance=False,
                                     own_failures=failed)
            factor = (estimate.get("history") or {}).get("factor", 1.0)
            evaluate = model_evaluator(model, job, factor=factor, own_failures=failed)
            region = store_trust_region(self.store, job, space,
                                        prior=self.training_frame().drop(columns=["profile"]))
            answer = recommend(result, space, evaluate, metrics=meta.get("metrics"),
                               region=region)
            # every searched knob: the recommended changes, the others at their defaults
            chosen = {**space.defaults(), **space.parse(answer.settings)}
            priced = evaluate(chosen)
            runtime_s, baseline = priced.runtime_s, answer.baseline_runtime_s
            interval = priced.runtime_interval or [runtime_s, runtime_s]
        else:
            chosen, runtime_s = {}, best["runtime_s"]
            interval, baseline, n_trials = [best["low_s"], best["high_s"]], best["runtime_s"], 0
            answer = Recommendation(reason="you set every setting the tuner searches")
        return tuned_answer(option, count, request.config, fixed, chosen, runtime_s, interval,
                            baseline, n_trials, recommendation=answer)

    # -- running applications ----------------------------------------------------------
    def _source(self, url: str) -> str:
        text = (url or "").strip()
        if not text:
            raise InvalidField("url", "give the Spark UI address (http://driver:4040), a "
                                      "History Server address, or an event log path")
        if re.match(r"^https?://", text, re.IGNORECASE):
            from jobgauge.profiler.readers.sparkrest import SparkUrlError, parse_url

            try:
                parse_url(text)
            except SparkUrlError as exc:
                raise InvalidField("url", exc.reason[:200]) from None
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
        from jobgauge.profiler.readers.live import LiveSourceError

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
            from jobgauge.profiler.readers.live import LiveSourceError, read_snapshot

            try:
                snapshot = read_snapshot(source)
            except LiveSourceError as exc:
                raise UnknownApplication(str(exc)) from None
            return [{"id": snapshot.app_id, "name": snapshot.app_name,
                     "completed": snapshot.status != "running"}]
        from jobgauge.profiler.readers.sparkrest import SparkRestClient, SparkRestError

        try:
            apps = SparkRestClient.from_url(source, timeout_s=UI_TIMEOUT_S,
                                            server="Spark UI").applications()
        except SparkRestError as exc:
            raise UnknownApplication(str(exc)) from None
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
        run = dict(row)
        run["status"] = "succeeded" if row["completed"] else "timed_out"
        try:  # the store's unique constraint decides, so concurrent posts cannot both insert
            key = store.add_run(run, row.get("config") or {})
        except DuplicateRun:
            raise DuplicateRun(f"run {row['run_id']!r} of source {row['source']!r} is already "
                               "in the store") from None
        return jsonable(store.runs_list(limit=1, id=key)[0])

    def models(self) -> list[dict]:
        return [jsonable(m) for m in self.store.list_models()]


def recommend(rows: list[dict], request: EstimateRequest) -> tuple[dict, str]:
    """The option that best meets the request, and why (in words).

    The choice is the tuner's (``Goal.for_limits(deadline, budget).choose``):
    deadline: the cheapest option whose predicted runtime meets it (this
    machine counts as free); budget: the fastest option within it; both: the
    cheapest that meets the deadline within the budget; neither: the fastest.
    When no option qualifies, the closest one, and the reason says so.
    """
    from jobgauge.tuner import Goal, Outcome

    deadline, budget = request.deadline_s, request.budget_usd
    index, feasible = Goal.for_limits(deadline, budget).choose(
        Outcome(r["runtime_s"], r["cost_usd"]) for r in rows)
    best = rows[index]
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
    return dict(best), reason + _across_programs(rows)


def _across_programs(rows: list[dict]) -> str:
    """Where the options are answered from the runs of different programs of the job's
    name (``answered_from_table``: a public table's, or None for jobgauge's and the
    user's runs), the words that say so: sort at 15 GB on local[2] replays jobgauge's
    HiBench sort, on c4.2xlarge it is answered from C3O's EMR sort, and the faster of
    the two compares two programs, not two clusters.  Empty where one program answers
    them all."""
    tables = {}
    for row in rows:
        tables.setdefault(row.get("answered_from_table"), []).append(row["instance_type"])
    if len(tables) < 2:
        return ""
    parts = [f"{', '.join(dict.fromkeys(types))} from "
             + (f"the {table} table's runs" if table else "jobgauge's and your runs")
             for table, types in sorted(tables.items(), key=lambda item: item[0] or "")]
    return ("; the options are answered from different programs of this name ("
            + "; ".join(parts) + "), so they compare programs as well as clusters")


def best_per_type(rows: list[dict], request: EstimateRequest) -> list[dict]:
    """For each instance type, its row at the node count :func:`recommend` picks among its own."""
    out = []
    for name in dict.fromkeys(r["instance_type"] for r in rows):
        own = [r for r in rows if r["instance_type"] == name]
        out.append(recommend(own, request)[0])
    return out


def _listed(known) -> list | None:
    """A list of what the model has seen (None: its metrics do not list it; a model
    saved by an older jobgauge may give a count instead)."""
    return list(known) if isinstance(known, (list, tuple)) and known else None


def _seen(value, known) -> bool | None:
    """Whether the model's training runs include ``value`` (None: the model does not say)."""
    known = _listed(known)
    return None if known is None else value in known


def _where(row) -> str:
    nodes = "" if row["instance_type"].startswith("local[") else f"{row['instance_count']} x "
    return f"{nodes}{row['instance_type']}"


def tuned_answer(option: Cluster, count: int, user_config: dict, layout: dict,
                 chosen: dict, runtime_s: float, interval, baseline, trials: int, *,
                 recommendation=None) -> dict:
    """The tuned configuration in the user's terms, with copyable lines; ``tuned`` and
    ``reason`` from ``recommendation`` (a ``tuner._recommend.Recommendation``): whether
    any setting was changed from Spark's defaults, and why (or why not), in words."""
    from jobgauge.tuner import format_setting, hive_set_lines

    typed = {**{k: _typed(v) for k, v in user_config.items()}, **chosen}
    settings = {k: format_setting(k, v) for k, v in typed.items()}
    submit = [f"--master {option.instance_type}"] if option.local else []
    submit += [f"--conf {k}={v}" for k, v in {**layout, **settings}.items()
               if k.startswith("spark.") and k != "spark.master"]
    cost = option.with_count(count).cost_usd(float(runtime_s))
    return {
        "instance_type": option.instance_type, "instance_count": count,
        "config": settings, "cluster_config": layout,
        "predicted_runtime_s": float(runtime_s),
        "predicted_low_s": float(interval[0]), "predicted_high_s": float(interval[1]),
        "cost_usd": cost,
        "baseline_runtime_s": None if baseline is None else float(baseline),
        "trials": trials,
        "tuned": bool(recommendation is not None and recommendation.tuned),
        "reason": recommendation.reason if recommendation is not None else None,
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
