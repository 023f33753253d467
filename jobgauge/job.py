"""The job being asked about: a workload at a data size, on a cluster, with settings.

A :class:`Job` is what every question to jobgauge is about: ``jobgauge
predict``, ``jobgauge tune`` and its model-guided trials, ``jobgauge-submit``
and the web service all build one, and the runtime models read it through one
conversion, :func:`jobs_frame`: a run-table frame, one row per job, the shape
of the measured run tables the models learn from and are evaluated on.  A :class:`Cluster` is the machines it runs on: ``instance_count`` nodes
of ``instance_type``, each with ``vcpus`` and ``memory_gib``, at
``hourly_price_usd`` per node; :func:`cost_usd` is what a run on it costs.

>>> cluster = Cluster.local_mode("local[2]", {"spark.driver.memory": "4g"})
>>> (cluster.instance_type, cluster.vcpus, cluster.memory_gib, cluster.hourly_price_usd)
('local[2]', 2.0, 4.0, None)
>>> job = Job("tpch-q3", "sf1", Cluster.from_catalog("m5.xlarge", 4),
...           {"spark.sql.shuffle.partitions": "64"})
>>> round(job.cost_usd(900), 3)                # 900 s x 4 nodes x $0.192 an hour
0.192

Where the cluster comes from:

- ``local[N]`` (:meth:`Cluster.local_mode`): this machine as a Spark local-mode run
  records it: N vCPUs, the driver heap as memory (``spark.driver.memory`` as
  set, else Spark's default 1g), no price;
- ``local`` (:meth:`Cluster.this_machine`): the whole machine, as local
  Hadoop jobs record it (its CPUs and physical memory);
- a cloud instance type (:meth:`Cluster.from_catalog`): vCPUs, memory and
  price from the instance catalog (``jobgauge.tuner.load_catalog``).

:meth:`Cluster.named` picks among them by the name; values given explicitly
win over the ones looked up.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from jobgauge import knobs
from jobgauge.errors import UsageError
from jobgauge.units import HIBENCH_SIZES, size_scale

#: Spark's default ``spark.driver.memory`` (the knob table's): the memory of a local[N]
#: run that does not set it.
DEFAULT_DRIVER_MEMORY = knobs.format_value("spark.driver.memory",
                                           knobs.knob("spark.driver.memory").default)
#: Spark's default ``spark.executor.memory`` (the knob table's): the heap of an executor
#: on a cluster master when no setting gives one.
DEFAULT_EXECUTOR_MEMORY = knobs.format_value("spark.executor.memory",
                                             knobs.knob("spark.executor.memory").default)


# ------------------------------------------------------------------ cost

def cost_usd(runtime_s: float, instance_count: float, hourly_price_usd: float) -> float:
    """Dollars of a run: runtime x nodes x hourly price of a node / 3600."""
    return float(runtime_s) * float(instance_count) * float(hourly_price_usd) / 3600.0


# ------------------------------------------------------------------ this machine

def local_cores(master: str) -> int:
    """The cores of a Spark local master: ``local`` 1, ``local[N]`` N, ``local[*]`` all."""
    match = re.fullmatch(r"local(?:\[(\d+|\*)\])?", str(master).strip())
    if not match:
        raise UsageError(f"master must be local, local[N] or spark://HOST:PORT; got {master!r}")
    value = match.group(1) or "1"
    return os.cpu_count() or 1 if value == "*" else int(value)


def memory_gib(text) -> float:
    """A Spark memory size (``512m``, ``2g``, ``1.5GiB``; a plain number: MiB) in GiB."""
    from jobgauge.units import GiB, parse_size

    return parse_size(text, default_unit="MiB", name="memory") / GiB


def _this_machine_facts() -> tuple[int, float | None]:
    """(CPUs this process may use, physical memory in GiB or None)."""
    vcpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    memory = None
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    memory = round(int(line.split()[1]) / 1024 ** 2, 2)
                    break
    except OSError:
        pass
    return vcpus, memory


def _number(name: str, value, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or value < 0 or (positive and value <= 0):
        raise UsageError(f"{name} must be a {'positive' if positive else 'non-negative'} "
                         f"number, got {value!r}")
    return float(value)


def _known(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


# ------------------------------------------------------------------ the cluster

@dataclass(frozen=True)
class Cluster:
    """The machines a job runs on: ``instance_count`` nodes of ``instance_type``,
    each with ``vcpus`` and ``memory_gib`` (None: unknown), at ``hourly_price_usd``
    per node and hour (None: free or unknown, as this machine is)."""

    instance_type: str
    vcpus: float | None
    memory_gib: float | None = None
    hourly_price_usd: float | None = None
    instance_count: int = 1
    source: str = ""
    network_gbps: float | None = None

    def __post_init__(self):
        if not isinstance(self.instance_type, str) or not self.instance_type.strip():
            raise UsageError(f"instance_type must be a non-empty string, "
                             f"got {self.instance_type!r}")
        count = self.instance_count
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
            raise UsageError(f"instance_count must be an int >= 1, got {count!r}")
        object.__setattr__(self, "instance_type", self.instance_type.strip())
        object.__setattr__(self, "instance_count", int(count))
        for name in ("vcpus", "memory_gib", "hourly_price_usd", "network_gbps"):
            value = getattr(self, name)
            object.__setattr__(self, name, None if not _known(value) else _number(
                name, value, positive=name in ("vcpus", "memory_gib", "network_gbps")))

    # -- where it comes from ----------------------------------------------------------
    @classmethod
    def local_mode(cls, master: str = "local[2]",
                   settings: Mapping | None = None) -> "Cluster":
        """This machine in Spark local mode, as local runs record it: ``local[N]``
        with N vCPUs and the driver heap (``spark.driver.memory`` of ``settings``,
        else Spark's default 1g) as memory; no price."""
        cores = local_cores(master)
        driver = (settings or {}).get("spark.driver.memory", DEFAULT_DRIVER_MEMORY)
        return cls(f"local[{cores}]", float(cores), round(memory_gib(driver), 3),
                   None, 1, "this machine")

    @classmethod
    def this_machine(cls, instance_count: int = 1) -> "Cluster":
        """The whole machine (instance type ``local``), as local Hadoop jobs record it:
        the CPUs this process may use and the physical memory."""
        vcpus, memory = _this_machine_facts()
        return cls("local", float(vcpus), memory, None, instance_count, "this machine")

    @classmethod
    def from_catalog(cls, instance_type: str, instance_count: int = 1, *,
                     catalog=None) -> "Cluster":
        """``instance_count`` nodes of a catalog type (``catalog``: an InstanceCatalog,
        default the packaged one); an unknown type is an UnknownInstanceType (UsageError)."""
        if catalog is None:
            from jobgauge.tuner._catalog import load_catalog

            catalog = load_catalog()
        node = catalog.get(instance_type)
        return cls(node.instance_type, float(node.vcpus), float(node.memory_gib),
                   float(node.hourly_price_usd), instance_count, node.source,
                   node.network_gbps)

    @classmethod
    def for_master(cls, master: str, settings: Mapping | None = None) -> "Cluster":
        """Where a spark-submit with ``master`` and ``settings`` runs, as far as its
        settings tell: :meth:`local_mode` for a local master, else one node (instance type
        ``cluster``) with ``spark.executor.cores`` vCPUs and the driver heap as memory."""
        settings = dict(settings or {})
        if str(master).strip().startswith("local"):
            return cls.local_mode(master, settings)
        try:
            cores = int(settings.get("spark.executor.cores", 1))
        except (TypeError, ValueError):
            raise UsageError(f"spark.executor.cores must be a whole number, got "
                             f"{settings.get('spark.executor.cores')!r}") from None
        driver = settings.get("spark.driver.memory", DEFAULT_DRIVER_MEMORY)
        return cls("cluster", float(cores), memory_gib(driver), None, 1, str(master))

    @classmethod
    def named(cls, instance_type: str, instance_count: int = 1, *, settings=None,
              catalog=None, vcpus=None, memory_gib=None, hourly_price_usd=None) -> "Cluster":
        """The cluster an instance type names: ``local[N]`` (:meth:`local_mode`, with the
        driver memory of ``settings``), ``local`` (:meth:`this_machine`), a catalog type
        (:meth:`from_catalog`), or a type outside the catalog described by ``vcpus``
        (and ``memory_gib``, ``hourly_price_usd``).  Values given win over the ones
        looked up."""
        name = str(instance_type or "").strip()
        if name.startswith("local["):
            base = cls.local_mode(name, settings)
        elif name == "local":
            base = cls.this_machine()
        else:
            if catalog is None:
                from jobgauge.tuner._catalog import load_catalog

                catalog = load_catalog()
            if name not in catalog and vcpus is not None:
                return cls(name, vcpus, memory_gib, hourly_price_usd, instance_count)
            base = cls.from_catalog(name, catalog=catalog)   # unknown: UnknownInstanceType
        given = {k: v for k, v in (("vcpus", vcpus), ("memory_gib", memory_gib),
                                   ("hourly_price_usd", hourly_price_usd)) if v is not None}
        return replace(base, instance_count=instance_count, **given)

    # -- what it is -----------------------------------------------------------------
    @property
    def local(self) -> bool:
        """True for this machine (``local`` or ``local[N]``)."""
        return self.instance_type == "local" or self.instance_type.startswith("local[")

    def with_count(self, instance_count: int) -> "Cluster":
        return replace(self, instance_count=instance_count)

    def cost_usd(self, runtime_s: float) -> float | None:
        """What ``runtime_s`` seconds on this cluster cost (None without a price)."""
        if self.hourly_price_usd is None:
            return None
        return cost_usd(runtime_s, self.instance_count, self.hourly_price_usd)

    def fields(self) -> dict:
        """The run-table fields of this cluster (unknown numbers as NaN)."""
        return {"instance_type": self.instance_type, "instance_count": self.instance_count,
                "vcpus": math.nan if self.vcpus is None else self.vcpus,
                "memory_gib": math.nan if self.memory_gib is None else self.memory_gib,
                "hourly_price_usd": math.nan if self.hourly_price_usd is None
                else self.hourly_price_usd,
                "network_gbps": math.nan if self.network_gbps is None else self.network_gbps}


def read_floor_s(input_bytes, instance_count, memory_gib, network_gbps) -> float | None:
    """The least time ``instance_count`` nodes, each with ``memory_gib`` of memory and a
    network of ``network_gbps`` Gbit/s, take to read ``input_bytes``: the part that does
    not fit in their memory comes in over their networks at full speed at best (it
    cannot have been cached), whatever the job does with it.  None where a figure is
    unknown; 0 where the input fits.  (Terasort's 500 GB on 2 m5.xlarge, 16 GiB and
    "up to 10 Gigabit" each: 186 s.)"""
    figures = (input_bytes, instance_count, memory_gib, network_gbps)
    if not all(_known(value) and float(value) > 0 for value in figures):
        return None
    beyond = float(input_bytes) - float(instance_count) * float(memory_gib) * 2 ** 30
    return max(beyond, 0.0) * 8 / (float(instance_count) * float(network_gbps) * 1e9)


def executor_layout(cluster: Cluster, count: int) -> dict[str, str]:
    """One executor per node of ``count`` nodes of ``cluster``'s type, with all its
    cores and the heap that fits beside Spark's overhead (the layout the runtime
    models assume when none is given)."""
    from jobgauge.tuner._space import MIN_OVERHEAD_MB, OVERHEAD_FRACTION, RESERVED_NODE_MB

    usable = (cluster.memory_gib or 0.0) * 1024 - RESERVED_NODE_MB
    heap = int(min(usable / (1 + OVERHEAD_FRACTION), usable - MIN_OVERHEAD_MB))
    heap = max(512, heap // 256 * 256)
    return {"spark.executor.instances": str(int(count)),
            "spark.executor.cores": str(int(cluster.vcpus)),
            "spark.executor.memory": f"{heap}m"}


def resources(master: str, static: dict, cluster=None) -> dict:
    """Where a run ran, in the run-table's words, plus its master and executor layout.

    ``cluster`` is a started StandaloneCluster for a ``spark://`` master."""
    if master.startswith("local"):
        local = Cluster.local_mode(master, static)
        return {"instance_type": local.instance_type, "instance_count": 1,
                "vcpus": int(local.vcpus), "memory_gib": local.memory_gib, "master": master,
                "executor_instances": 1, "executor_cores": int(local.vcpus),
                "executor_memory_mb": int(memory_gib(
                    static.get("spark.driver.memory", DEFAULT_DRIVER_MEMORY)) * 1024)}
    if cluster is None:
        raise UsageError("a spark:// master needs its cluster description")
    executor_cores = int(static.get("spark.executor.cores", cluster.cores_per_worker))
    cores_max = int(static.get("spark.cores.max", cluster.workers * cluster.cores_per_worker))
    return {"instance_type": "standalone", "instance_count": cluster.workers,
            "vcpus": cluster.cores_per_worker,
            "memory_gib": round(memory_gib(cluster.memory_per_worker), 3),
            "master": master, "executor_instances": max(1, cores_max // executor_cores),
            "executor_cores": executor_cores,
            "executor_memory_mb": int(memory_gib(static.get("spark.executor.memory",
                                                           DEFAULT_EXECUTOR_MEMORY))
                                      * 1024)}


# ------------------------------------------------------------------ the job

@dataclass(frozen=True)
class Job:
    """A workload at a data size (``datasize`` label, ``input_bytes`` if known), on a
    cluster, with settings (knob -> value); ``profile`` and ``dag`` are the summary and
    plan DAG of a profiled run of it, when the model may use them.  ``source`` and
    ``run_id`` name the question in the frame the models read."""

    workload: str
    datasize: str = ""
    cluster: Cluster = field(default_factory=Cluster.local_mode)
    settings: Mapping = field(default_factory=dict)
    framework: str = "spark"
    input_bytes: float | None = None
    profile: dict | None = None
    dag: dict | None = None
    source: str = "query"
    run_id: str = "0"

    def __post_init__(self):
        if not isinstance(self.workload, str) or not self.workload.strip():
            raise UsageError("workload must be a non-empty string")
        if not isinstance(self.settings, Mapping):
            raise UsageError("config must be a dict of knob: value")
        if not isinstance(self.cluster, Cluster):
            raise UsageError(f"cluster must be a Cluster, got {type(self.cluster).__name__}")
        object.__setattr__(self, "workload", self.workload.strip())
        object.__setattr__(self, "datasize", "" if self.datasize is None else str(self.datasize))
        object.__setattr__(self, "framework", self.framework or "spark")
        object.__setattr__(self, "settings", {str(k): v for k, v in self.settings.items()})
        object.__setattr__(self, "input_bytes", None if not _known(self.input_bytes)
                           else _number("input_bytes", self.input_bytes, positive=False))
        if self.profile is not None and hasattr(self.profile, "summary"):
            object.__setattr__(self, "profile", self.profile.summary())
        if self.dag is not None and hasattr(self.dag, "to_dict"):
            object.__setattr__(self, "dag", self.dag.to_dict())
        if self.source == "query":
            self._check_settings()
            self._check_datasize()
            self.check_fits()

    def check_fits(self) -> None:
        """A Spark question on nodes of a known size whose executor could never start
        there (its ``spark.executor.cores`` or ``spark.executor.memory`` beyond one node,
        :func:`jobgauge.tuner._space.check_executor_fit`) is refused (UsageError): such
        an application waits for its executors forever, and the model answered anyway
        (TPC-H Q3 at SF 3 on 2 m5.xlarge with spark.executor.memory=100g: 2.84 s, as
        with the defaults).  Local mode (it ignores the executor settings) and the
        clusters a master alone describes (``cluster``, ``standalone``) are not checked."""
        cluster = self.cluster
        asked = {name: self.settings[name] for name in ("spark.executor.cores",
                                                        "spark.executor.memory")
                 if self.settings.get(name) is not None}
        if not asked or self.framework != "spark" or cluster.local or \
                cluster.instance_type in ("cluster", "standalone") or \
                cluster.vcpus is None or cluster.memory_gib is None:
            return
        from jobgauge.tuner._errors import InvalidConfiguration
        from jobgauge.tuner._space import check_executor_fit

        try:
            check_executor_fit({name: knobs.find(name).validate(value)
                                for name, value in asked.items()},
                               name=cluster.instance_type, vcpus=cluster.vcpus,
                               memory_gib=cluster.memory_gib)
        except InvalidConfiguration as exc:
            raise UsageError(f"{exc}: no executor could start, and the job would wait for "
                             f"one forever") from None

    def _check_settings(self) -> None:
        """A question is never answered for a setting outside its knob's valid range:
        each setting the knob table knows is checked (UsageError naming the knob, its
        valid values and what it got).  Measured runs (another ``source``) keep what
        they recorded."""
        knobs.validate_known(self.settings)

    def _check_datasize(self) -> None:
        """A question's size label must say a size its workload is sized by: a label
        starting with ``sf`` is a positive TPC-H scale factor (``sf0.1``, ``sf300``); a
        TPC-H query takes one, a HiBench workload a HiBench size (``tiny`` ...
        ``gigantic``, ``medium-local``).  A label that says nothing was answered as
        nothing at all (``sf-5``, ``sfx`` and ``tiny`` for TPC-H Q9 each gave 3.8 s).
        With ``input_bytes`` given, or for a job of the user's, the label is only a
        name."""
        label = self.datasize.strip()
        if not label or self.input_bytes is not None:
            return
        from jobgauge.profiler.workloads import benchmark_of

        factor, ordinal = size_scale(label)
        scale_factor = math.isfinite(factor) and factor > 0
        benchmark = benchmark_of(self.workload)
        if not scale_factor and (label.lower().startswith("sf") or benchmark == "TPC-H"):
            raise UsageError(f"datasize {label!r} is not a TPC-H scale factor: give sf and a "
                             f"number above 0, such as sf1, sf3 or sf0.1")
        if benchmark == "HiBench" and not math.isfinite(ordinal):
            raise UsageError(f"{self.workload} is sized by a HiBench size ("
                             f"{', '.join(HIBENCH_SIZES)}); got datasize {label!r}")

    __hash__ = None  # settings is a dict

    @classmethod
    def from_row(cls, row: Mapping) -> "Job":
        """The job of a run-table row (a dict with its columns; ``config`` the settings)."""
        def known(key):
            value = row.get(key)
            return value if _known(value) else None

        cluster = Cluster(str(row.get("instance_type") or "unknown"), known("vcpus"),
                          known("memory_gib"), known("hourly_price_usd"),
                          int(known("instance_count") or 1))
        return cls(str(row.get("workload") or ""), row.get("datasize") or "", cluster,
                   dict(row.get("config") or {}), row.get("framework") or "spark",
                   known("input_bytes"), row.get("profile"), row.get("dag"),
                   str(row.get("source") or "query"), str(row.get("run_id") or "0"))

    def on(self, cluster: Cluster) -> "Job":
        """This job on another cluster."""
        return replace(self, cluster=cluster)

    def with_settings(self, changes: Mapping) -> "Job":
        """This job with ``changes`` added to its settings.  On this machine, a change of
        ``spark.master`` or ``spark.driver.memory`` changes the cluster the way a local
        run records it (:meth:`Cluster.local_mode`)."""
        settings = {**self.settings, **{str(k): v for k, v in changes.items()}}
        cluster = self.cluster
        if cluster.instance_type.startswith("local[") and \
                ("spark.master" in changes or "spark.driver.memory" in changes):
            driver = changes.get("spark.driver.memory")
            if driver is None and cluster.memory_gib is not None:
                driver = f"{int(round(cluster.memory_gib * 1024))}m"
            master = str(changes.get("spark.master", cluster.instance_type))
            cluster = Cluster.local_mode(master, {} if driver is None
                                         else {"spark.driver.memory": driver})
        return replace(self, settings=settings, cluster=cluster)

    def cost_usd(self, runtime_s: float) -> float | None:
        """What a run of ``runtime_s`` seconds on the job's cluster costs (None: no price)."""
        return self.cluster.cost_usd(runtime_s)

    def row(self) -> dict:
        """The job as a run-table row without a runtime (unknown numbers NaN)."""
        row = {"source": self.source, "workload": self.workload, "framework": self.framework,
               "datasize": self.datasize,
               "input_bytes": math.nan if self.input_bytes is None else self.input_bytes,
               **self.cluster.fields(), "runtime_s": math.nan, "completed": True,
               "run_id": self.run_id, "config": dict(self.settings)}
        if self.profile is not None:
            row["profile"] = self.profile
        if self.dag is not None:
            row["dag"] = self.dag
        return row

    def frame(self):
        """The one-row frame the runtime models read (:func:`jobs_frame`)."""
        return jobs_frame([self])


def jobs_frame(jobs: Iterable[Job]):
    """The run-table DataFrame the runtime models read: one row per job, with
    ``config`` (a dict) and ``config_json``; ``profile`` and ``dag`` columns when
    any job has them."""
    import pandas as pd

    from jobgauge.runtable import config_json

    rows = [job.row() for job in jobs]
    frame = pd.DataFrame(rows)
    if len(rows):
        frame["config_json"] = [config_json(c) for c in frame["config"]]
    return frame


__all__ = ["DEFAULT_DRIVER_MEMORY", "Cluster", "Job", "cost_usd", "executor_layout",
           "jobs_frame", "local_cores", "memory_gib", "read_floor_s", "resources"]
