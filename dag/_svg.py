"""Draw a QueryDag as SVG without graphviz: a layered layout computed here.

Layers come from the longest path to a sink ("as late as possible"): data
flows top to bottom and every producer sits right above its nearest consumer,
which keeps query trees compact.  Within a layer nodes start in topological
order and a few barycenter sweeps reorder them to cut edge crossings.  All
text is XML-escaped.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from jobgauge.dag._graph import edge_class
from jobgauge.dag._serialize import _depths, topological_order

NODE_WIDTH = 190
NODE_HEIGHT = 46
GAP_X = 24
GAP_Y = 56
MARGIN = 20
_FILL = {
    "scan": "#e3f2fd", "join": "#fce4ec", "aggregate": "#f3e5f5", "exchange": "#fff3e0",
    "broadcast": "#fff8e1", "sort": "#e8f5e9", "filter": "#f1f8e9", "fetch": "#eceff1",
    "map": "#e3f2fd", "tez-map": "#e3f2fd", "spark-map": "#e3f2fd", "map-local": "#e1f5fe",
    "reduce": "#f3e5f5", "tez-reducer": "#f3e5f5", "spark-reducer": "#f3e5f5",
}
_STROKE = {"broadcast": "#ef6c00", "shuffle": "#37474f", "pipeline": "#78909c",
           "dependency": "#9e9e9e", "other": "#607d8b"}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _human(number) -> str:
    if number is None:
        return ""
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        return str(number)
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(number) >= size:
            return f"{number / size:.1f}{unit}"
    return str(number)


def _layers(dag) -> list[list]:
    order = topological_order(dag)
    _, height = _depths(dag)
    top = max(height.values(), default=-1)
    layers: list[list] = [[] for _ in range(top + 1)]
    for node in order:  # as late as possible: each node right above its nearest consumer
        layers[top - height[node]].append(node)
    for _ in range(2):  # barycenter sweeps: down using parents, up using children
        for neighbours, sweep in ((dag.predecessors, range(1, len(layers))),
                                  (dag.successors, range(len(layers) - 2, -1, -1))):
            for index in sweep:
                position = {}
                for layer in layers:
                    for i, node in enumerate(layer):
                        position[node] = i - (len(layer) - 1) / 2
                def center(node, neighbours=neighbours, position=position):
                    linked = [position[n] for n in neighbours(node)]
                    return sum(linked) / len(linked) if linked else position[node]
                layers[index] = sorted(layers[index], key=lambda n: (center(n), position[n]))
    return layers


def to_svg(dag) -> str:
    """An SVG document (a string) drawing ``dag``: boxes labelled with the node
    id and kind (and rows when known), arrows from producer to consumer;
    broadcast edges orange, stage-order edges dashed; each box and edge has a
    ``<title>`` tooltip."""
    layers = _layers(dag)
    widest = max((len(layer) for layer in layers), default=0)
    width = max(widest * (NODE_WIDTH + GAP_X) - GAP_X, NODE_WIDTH) + 2 * MARGIN
    height = max(len(layers) * (NODE_HEIGHT + GAP_Y) - GAP_Y, NODE_HEIGHT) + 2 * MARGIN
    xy = {}
    for row, layer in enumerate(layers):
        span = len(layer) * (NODE_WIDTH + GAP_X) - GAP_X
        left = (width - span) / 2
        for i, node in enumerate(layer):
            xy[node] = (left + i * (NODE_WIDTH + GAP_X), MARGIN + row * (NODE_HEIGHT + GAP_Y))
    title = dag.graph.get("format") or "plan"
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'role="img" aria-label={quoteattr(f"{title}: {dag.number_of_nodes()} nodes")} '
        'font-family="sans-serif" font-size="12">',
        "<defs>",
    ]
    for name, color in _STROKE.items():
        out.append(f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="10" refY="5" '
                   f'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                   f'<path d="M 0 0 L 10 5 L 0 10 z" fill="{color}"/></marker>')
    out.append("</defs>")
    out.append('<g class="edges">')
    for u, v, attrs in sorted(dag.edges(data=True), key=lambda e: (str(e[0]), str(e[1]))):
        (x1, y1), (x2, y2) = xy[u], xy[v]
        klass = edge_class(attrs.get("edge_type"))
        edge_text = f"{u} -> {v} ({attrs.get('edge_type')})"
        dash = ' stroke-dasharray="5,4"' if klass == "dependency" else ""
        out.append(
            f'<line x1="{x1 + NODE_WIDTH / 2:.1f}" y1="{y1 + NODE_HEIGHT:.1f}" '
            f'x2="{x2 + NODE_WIDTH / 2:.1f}" y2="{y2:.1f}" stroke="{_STROKE[klass]}" '
            f'stroke-width="1.4"{dash} marker-end="url(#arrow-{klass})">'
            f'<title>{escape(edge_text)}</title></line>')
    out.append("</g>")
    out.append('<g class="nodes">')
    for layer in layers:
        for node in layer:
            attrs = dag.nodes[node]
            x, y = xy[node]
            kind = str(attrs.get("kind", "other"))
            rows = attrs.get("rows")
            second = kind + (f" \u00b7 {_human(rows)} rows" if rows is not None else "")
            ops = ", ".join(str(op.get("type")) for op in attrs.get("operators") or []
                            if isinstance(op, dict))
            tooltip = f"{node}\n{attrs.get('label', '')}\nkind: {kind}"
            if rows is not None:
                tooltip += f"\nrows: {rows}"
            if attrs.get("data_size") is not None:
                tooltip += f"\nbytes: {attrs['data_size']}"
            if ops:
                tooltip += f"\noperators: {_cut(ops, 400)}"
            out.append(
                f'<g class="node" data-id={quoteattr(str(node))}>'
                f'<title>{escape(tooltip)}</title>'
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_WIDTH}" height="{NODE_HEIGHT}" rx="6" '
                f'fill="{_FILL.get(kind, "#fafafa")}" stroke="#455a64"/>'
                f'<text x="{x + NODE_WIDTH / 2:.1f}" y="{y + 19:.1f}" text-anchor="middle" '
                f'font-weight="bold">{escape(_cut(str(node), 28))}</text>'
                f'<text x="{x + NODE_WIDTH / 2:.1f}" y="{y + 36:.1f}" text-anchor="middle" '
                f'fill="#455a64">{escape(_cut(second, 30))}</text></g>')
    out.append("</g></svg>")
    return "\n".join(out) + "\n"
