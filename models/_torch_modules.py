"""PyTorch modules of the network models (imported only when a network is fitted).

A model takes one of these classes as its ``module`` hyperparameter and builds
it in ``fit``, so any ``torch.nn.Module`` with the same constructor keywords
can replace it.
"""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    """Fully connected network: inputs -> hidden layers (ReLU, dropout) -> one output."""

    def __init__(self, *, n_inputs, hidden_sizes=(64, 64), dropout=0.0):
        super().__init__()
        layers = []
        width = n_inputs
        for size in hidden_sizes:
            layers += [nn.Linear(width, size), nn.ReLU()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = size
        layers.append(nn.Linear(width, 1))
        self.layers = nn.Sequential(*layers)

    def forward(self, static):
        return self.layers(static).squeeze(-1)


class DagEncoderRegressor(nn.Module):
    """A GRU or LSTM reads a job's DAG node sequence; its final state joins the
    static features in a fully connected head that outputs log runtime.

    ``nodes`` is a padded float tensor [n_dags, length, node_features] of the
    distinct DAGs, ``lengths`` their true lengths (>= 1; any length works) and
    ``dag_index`` [batch] says which DAG each row has, so a DAG shared by many
    rows (every run of one query) is encoded once per batch.
    """

    def __init__(self, *, n_inputs, n_node_features, hidden_size=32, num_layers=1, cell="gru",
                 head_sizes=(64, 64), dropout=0.0):
        super().__init__()
        recurrent = nn.GRU if cell == "gru" else nn.LSTM
        self.encoder = recurrent(n_node_features, hidden_size, num_layers=num_layers,
                                 batch_first=True)
        self.head = MLP(n_inputs=n_inputs + hidden_size, hidden_sizes=head_sizes, dropout=dropout)

    def forward(self, static, nodes, lengths, dag_index):
        packed = nn.utils.rnn.pack_padded_sequence(nodes, lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, state = self.encoder(packed)
        if isinstance(state, tuple):  # LSTM: (hidden, cell)
            state = state[0]
        return self.head(torch.cat([static, state[-1][dag_index]], dim=1))
