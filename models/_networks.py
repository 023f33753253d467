"""Neural runtime models (PyTorch, imported only inside fit/predict).

:class:`FullyConnectedModel` ("fc") is a small ensemble of fully connected
networks on the standardised run features.  :class:`DagRNN` ("rnn") adds a
GRU/LSTM that reads the job's DAG, serialised node by node in topological
order by :func:`jobgauge.dag.serialize`, from a ``dag`` column of QueryDag
node-link dicts (rows without one get a one-node empty sequence, so the
network still predicts from the run features).

Both learn standardised log runtime with mean squared error; a censored run
(``completed=False``) adds a loss only when the prediction is below its bound.
Training is deterministic under ``random_state`` (its own torch RNG, one
thread), and the module is built in ``fit`` from the ``module`` class and the
size hyperparameters, so ``clone``/``get_params`` rebuild it.
"""

from __future__ import annotations

import contextlib
import math
from typing import ClassVar

import numpy as np

from jobgauge.errors import ModelError
from jobgauge.models._base import RuntimeModel
from jobgauge.models._params import Boolean, Interval, IntTuple, Options, Subclass, \
    store_params


@contextlib.contextmanager
def _torch_session(seed, threads):
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield torch
    finally:
        torch.set_num_threads(previous)


@contextlib.contextmanager
def _inference_session(module, threads):
    """The torch of a prediction by the networks of ``module`` (a ModuleList): seeded
    like training only where a part of a network is still in training mode (dropout draws random numbers); in eval mode
    the outputs do not depend on the RNG, so the costly fork and seed are skipped.
    The thread count changes only where it differs from ``threads``."""
    import torch

    if any(part.training for network in module for part in network.modules()):
        with _torch_session(0, threads) as seeded:
            yield seeded
        return
    previous = torch.get_num_threads()
    if previous == threads:
        yield torch
        return
    torch.set_num_threads(threads)
    try:
        yield torch
    finally:
        torch.set_num_threads(previous)


class _NetworkModel(RuntimeModel):
    """Shared training loop of the network models."""

    _parameter_constraints: ClassVar[dict] = {
        **RuntimeModel._parameter_constraints,
        "module": [None, Subclass("torch.nn:Module")],
        "dropout": [Interval(float, 0.0, 1.0, closed="left")],
        "epochs": [Interval(int, 1, None)],
        "batch_size": [Interval(int, 1, None)],
        "learning_rate": [Interval(float, 0.0, None, closed="neither")],
        "weight_decay": [Interval(float, 0.0, None)],
        "n_networks": [Interval(int, 1, None)],
        "n_threads": [Interval(int, 1, None)],
        "identity_dropout": [Interval(float, 0.0, 1.0, closed="left")],
    }

    # subclasses: _default_module(), _module_kwargs(n_inputs), _sequence_fit(X), _sequences(X)
    def _sequence_fit(self, X):
        return None

    def _sequences(self, X):
        return None

    @staticmethod
    def _tensors(torch, static, sequences):
        """Network inputs: [static] or [static, nodes, lengths, dag_index] (distinct DAGs)."""
        inputs = [torch.as_tensor(static)]
        if sequences is not None:
            inputs += [torch.as_tensor(part) for part in sequences]
        return inputs

    @staticmethod
    def _batch(torch, inputs, rows):
        """The inputs of the rows of one mini-batch (only the DAGs these rows use)."""
        if len(inputs) == 1:
            return [inputs[0][rows]]
        static, nodes, lengths, dag_index = inputs
        used, index = torch.unique(dag_index[rows], return_inverse=True)
        longest = int(lengths[used].max())
        return [static[rows], nodes[used, :longest], lengths[used], index]

    def _seed(self):
        if self.random_state is None:
            return int(np.random.randint(0, 2 ** 31 - 1))
        return int(self.random_state)

    def _fit_log(self, X, log_y, censored):
        from sklearn.preprocessing import StandardScaler

        matrix = self._features_fit(X, log_y)
        self._fit_size_exponent(X, matrix, log_y, censored)
        log_y = log_y - self._size_offset(matrix)
        self._fit_size_ranges(X, matrix)
        self.scaler_ = StandardScaler().fit(matrix)
        static = self.scaler_.transform(matrix).astype(np.float32)
        self.target_mean_ = float(log_y.mean())
        self.target_scale_ = float(log_y.std()) or 1.0
        target = ((log_y - self.target_mean_) / self.target_scale_).astype(np.float32)
        # columns naming the workload: hidden for a share of training rows, so the network
        # also learns to predict a workload it has never seen from size, cluster and knobs
        names = list(self.features_.get_feature_names_out())
        identity = [i for i, n in enumerate(names) if n.startswith(("workload=", "framework="))]
        self.identity_columns_ = np.array(identity, dtype=np.int64)
        self.identity_absent_ = ((0.0 - self.scaler_.mean_) / self.scaler_.scale_)[
            self.identity_columns_].astype(np.float32)
        self._sequence_fit(X)
        sequences = self._sequences(X)
        module_class = self.module or self._default_module()
        with _torch_session(self._seed(), self.n_threads) as torch:
            inputs = self._tensors(torch, static, sequences)
            y = torch.as_tensor(target)
            bound = torch.as_tensor(censored)
            networks = []
            for _ in range(self.n_networks):
                try:
                    network = module_class(**self._module_kwargs(static.shape[1]))
                except TypeError as exc:
                    raise ModelError(f"{module_class.__name__} cannot be built with "
                                     f"{sorted(self._module_kwargs(static.shape[1]))}: {exc}") \
                        from None
                self._train(torch, network, inputs, y, bound)
                network.eval()
                networks.append(network)
            self.module_ = torch.nn.ModuleList(networks)

    def _train(self, torch, network, inputs, y, censored):
        optimizer = torch.optim.Adam(network.parameters(), lr=self.learning_rate,
                                     weight_decay=self.weight_decay)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=self.epochs)
        n = len(y)
        batch = min(self.batch_size, n)
        network.train()
        for _ in range(self.epochs):
            order = torch.randperm(n)
            for start in range(0, n, batch):
                rows = order[start:start + batch]
                batch_inputs = self._batch(torch, inputs, rows)
                if self.identity_dropout > 0 and len(self.identity_columns_):
                    hide = torch.rand(len(rows)) < self.identity_dropout
                    if hide.any():
                        static = batch_inputs[0].clone()
                        columns = torch.as_tensor(self.identity_columns_)
                        static[hide.nonzero().squeeze(1)[:, None], columns] = \
                            torch.as_tensor(self.identity_absent_)
                        batch_inputs[0] = static
                predicted = network(*batch_inputs)
                diff = predicted - y[rows]
                loss = torch.where(censored[rows], torch.relu(-diff) ** 2, diff ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            schedule.step()
        final = float(loss.detach())
        if not math.isfinite(final):
            raise ModelError(f"{type(self).__name__} training diverged (loss {final}); "
                             f"lower learning_rate")

    def _predict_log(self, X):
        matrix = self._features(X)
        offset = self._size_offset(matrix)
        matrix = self._clip_sizes(matrix, X)
        static = self.scaler_.transform(matrix).astype(np.float32)
        sequences = self._sequences(X)
        with _inference_session(self.module_, self.n_threads) as torch, torch.no_grad():
            inputs = self._tensors(torch, static, sequences)
            outputs = torch.stack([network(*inputs) for network in self.module_]).mean(0)
        return outputs.numpy().astype(float) * self.target_scale_ + self.target_mean_ + offset


class FullyConnectedModel(_NetworkModel):
    """Ensemble of fully connected networks on the run features ("fc")."""

    _parameter_constraints: ClassVar[dict] = {
        **_NetworkModel._parameter_constraints,
        "hidden_sizes": [IntTuple()],
    }

    def __init__(self, *, module=None, hidden_sizes=(256, 128), dropout=0.0, epochs=100,
                 batch_size=64, learning_rate=3e-3, weight_decay=1e-4, n_networks=2,
                 n_threads=1, identity_dropout=0.0, random_state=0, calibration_size=0.2,
                 censored_iterations=0, with_classes=False, size_exponent=None):
        store_params(self, locals())

    def _default_module(self):
        from jobgauge.models._torch_modules import MLP

        return MLP

    def _module_kwargs(self, n_inputs):
        return {"n_inputs": n_inputs, "hidden_sizes": tuple(self.hidden_sizes),
                "dropout": self.dropout}


class DagRNN(_NetworkModel):
    """GRU/LSTM over the serialised DAG plus the run features ("rnn").

    The ``dag`` column holds node-link dicts (``QueryDag.to_dict()``) or
    QueryDag objects; sequences longer than ``max_nodes`` keep their first
    ``max_nodes`` nodes (sources first).
    """

    _parameter_constraints: ClassVar[dict] = {
        **_NetworkModel._parameter_constraints,
        "hidden_size": [Interval(int, 1, None)],
        "num_layers": [Interval(int, 1, None)],
        "cell": [Options({"gru", "lstm"})],
        "head_sizes": [IntTuple()],
        "max_nodes": [Interval(int, 1, None)],
        "node_metrics": [Boolean()],
    }

    def __init__(self, *, module=None, hidden_size=32, num_layers=1, cell="gru",
                 head_sizes=(256, 128), max_nodes=128, node_metrics=True, dropout=0.0,
                 epochs=100, batch_size=64, learning_rate=3e-3, weight_decay=1e-4,
                 n_networks=2, n_threads=1, identity_dropout=0.0, random_state=0,
                 calibration_size=0.2, censored_iterations=0, with_classes=False,
                 size_exponent=None):
        store_params(self, locals())

    def _default_module(self):
        from jobgauge.models._torch_modules import DagEncoderRegressor

        return DagEncoderRegressor

    def _module_kwargs(self, n_inputs):
        return {"n_inputs": n_inputs, "n_node_features": self.node_mean_.shape[0],
                "hidden_size": self.hidden_size, "num_layers": self.num_layers,
                "cell": self.cell, "head_sizes": tuple(self.head_sizes),
                "dropout": self.dropout}

    def _raw_sequences(self, X):
        """(distinct serialized DAGs, index of each row's DAG)."""
        import json

        from jobgauge.dag import FEATURE_NAMES

        column = X["dag"].tolist() if "dag" in X.columns else [None] * len(X)
        empty = np.zeros((1, len(FEATURE_NAMES)), dtype=np.float32)
        by_object, by_content, matrices, index = {}, {}, [], np.empty(len(column), np.int64)
        for row, value in enumerate(column):
            position = by_object.get(id(value))
            if position is None:
                content = value if value is None or isinstance(value, str) else \
                    json.dumps(value.to_dict() if hasattr(value, "to_dict") else value,
                               sort_keys=True, default=str)
                if isinstance(content, float):
                    content = None
                position = by_content.get(content)
                if position is None:
                    position = len(matrices)
                    matrices.append(dag_matrix(value, empty,
                                               node_metrics=self.node_metrics))
                    by_content[content] = position
                by_object[id(value)] = position
            index[row] = position
        return matrices, index

    def _sequence_fit(self, X):
        matrices, index = self._raw_sequences(X)
        nodes = np.vstack([matrices[i] for i in index])  # weighted by rows, as training sees them
        self.node_mean_ = nodes.mean(0)
        self.node_scale_ = np.where(nodes.std(0) > 0, nodes.std(0), 1.0)
        self.has_dag_ = "dag" in X.columns and X["dag"].notna().any()

    def _sequences(self, X):
        from jobgauge.dag import pad_sequences

        matrices, index = self._raw_sequences(X)
        scaled = [((m - self.node_mean_) / self.node_scale_).astype(np.float32)
                  for m in matrices]
        longest = max(len(m) for m in scaled)
        batch, lengths = pad_sequences(scaled, max_len=min(self.max_nodes, longest))
        return batch, lengths, index


#: Measured metrics of a stage node (``QueryDag.from_stages``) appended to its serialized
#: row as log1p values: what the profiling run saw each stage do.
NODE_METRICS = ("duration_s", "executor_run_time_ms", "executor_cpu_time_ms", "input_bytes",
                "shuffle_read_bytes", "shuffle_write_bytes", "jvm_gc_time_ms",
                "memory_spill_bytes")


def node_metric_matrix(dag, node_ids) -> np.ndarray:
    """One row per node: log1p of :data:`NODE_METRICS` (0 where unmeasured) and a flag
    saying whether the node has measured metrics."""
    out = np.zeros((len(node_ids), len(NODE_METRICS) + 1), dtype=np.float32)
    for row, node in enumerate(node_ids):
        metrics = dag.nodes[node].get("metrics")
        if not isinstance(metrics, dict):
            continue
        out[row, -1] = 1.0
        for column, name in enumerate(NODE_METRICS):
            value = metrics.get(name)
            if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
                out[row, column] = math.log1p(value)
    return out


def dag_matrix(value, empty, *, node_metrics=False):
    """The serialised node matrix of one ``dag`` cell (dict, QueryDag, JSON text or None);
    with ``node_metrics`` the :func:`node_metric_matrix` columns are appended."""
    import json

    from jobgauge.dag import QueryDag, serialize
    from jobgauge.errors import GaugeError

    width = empty.shape[1] + (len(NODE_METRICS) + 1 if node_metrics else 0)
    blank = np.zeros((1, width), dtype=np.float32)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return blank
    if isinstance(value, str):
        if not value.strip():
            return blank
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ModelError(f"dag is not valid JSON: {value[:60]!r}") from None
    try:
        dag = value if isinstance(value, QueryDag) else QueryDag.from_dict(value)
        matrix, node_ids = serialize(dag)
    except GaugeError as exc:
        raise ModelError(f"cannot read a dag cell: {exc}") from None
    if not len(matrix):
        return blank
    if node_metrics:
        matrix = np.hstack([matrix, node_metric_matrix(dag, node_ids)])
    return matrix
