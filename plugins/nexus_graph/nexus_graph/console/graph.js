/* Graph: the knowledge graph around one entity (neighbors, so it stays usable at 10k entities), found with
 * search_knowledge; click an entity for its relations and neighbours. Also the entropy report and the Mermaid
 * export. The view `neighbourhood` is what MCP Apps clients show for the neighbors tool.
 */
"use strict";
(() => {
  const LIMIT = 150; // entities drawn at most
  const route = (query) => `graph/graph?${new URLSearchParams(Object.entries(query).filter(([, v]) => v !== "" && v != null))}`;

  Nexus.page("graph/graph", {
    async render(root, { query }, nx) {
      const { h } = nx;
      const tab = query.tab || "explore";
      const tabs = h(
        "nav",
        { class: "tabs" },
        [["explore", "Explore"], ["health", "Entropy report"], ["mermaid", "Mermaid"]].map(([key, label]) =>
          h("a", { href: "#/" + route({ ...query, tab: key }), class: key === tab ? "active" : "" }, label),
        ),
      );
      const body = h("div");
      root.append(h("h1", {}, "Knowledge graph"), tabs, body);
      if (tab === "health") return entropy(body, nx, query);
      if (tab === "mermaid") return mermaid(body, nx, query);
      return explore(body, nx, query);
    },
    views: {
      neighbourhood(root, result, nx) {
        const draw = (res) =>
          drawNeighbourhood(root, res, nx, "", async (id) => {
            try {
              draw(await nx.call("neighbors", { id, depth: res.depth || 1, limit: LIMIT }));
            } catch (error) {
              root.append(nx.problem(error));
            }
          });
        draw(result);
      },
    },
  });

  async function explore(body, nx, query) {
    const { h } = nx;
    const text = h("input", { type: "search", name: "q", value: query.q || "", placeholder: "Find an entity: name, id, tag, words of its description" });
    const type = h("input", { name: "type", value: query.type || "", placeholder: "type filter", size: 12, list: "entity-types" });
    const depth = h("select", { name: "depth" }, [1, 2, 3].map((d) => nx.option(d, `${d} hop${d > 1 ? "s" : ""}`, query.depth || 1)));
    const types = h("datalist", { id: "entity-types" });
    body.append(
      h(
        "form",
        {
          class: "filters",
          role: "search",
          onsubmit(event) {
            event.preventDefault();
            nx.go(route({ ...query, q: text.value.trim(), type: type.value.trim(), depth: depth.value }));
          },
        },
        text,
        type,
        types,
        depth,
        h("button", { type: "submit", class: "primary" }, "Search"),
      ),
    );
    const hits = h("div", { class: "hits" });
    const canvas = h("div", { class: "canvas" });
    const side = h("div", { class: "entity" });
    body.append(hits, h("div", { class: "columns" }, canvas, side));
    const seenTypes = new Set();
    const noteTypes = (list) => {
      for (const t of list) if (!seenTypes.has(t)) seenTypes.add(t) && types.append(h("option", { value: t }));
    };
    const open = (id) => nx.go(route({ ...query, id }));

    if (query.q) {
      try {
        const found = await nx.call("search_knowledge", { query: query.q, limit: 30 });
        noteTypes(found.hits.map((x) => x.type));
        const shown = found.hits.filter((x) => !query.type || x.type === query.type);
        hits.append(
          h("p", { class: "muted" }, `${shown.length} of ${found.total_entities} entities match`),
          h(
            "ul",
            { class: "results" },
            shown.map((x) =>
              h(
                "li",
                { "data-entity": x.id },
                h("a", { href: "#/" + route({ ...query, id: x.id }) }, x.name),
                h("span", { class: "meta" }, " ", h("span", { class: "chip" }, x.type), ` ${x.category} · matched ${x.matched_field}: `, h("em", {}, x.matched_text), h("span", { class: "score" }, ` ${nx.number(x.score, 0)}`)),
              ),
            ),
          ),
        );
      } catch (error) {
        hits.append(nx.problem(error));
      }
    }
    if (!query.id) {
      if (!query.q) await startingPoints(canvas, nx, open);
      return;
    }
    nx.loading(canvas);
    try {
      const result = await nx.call("neighbors", { id: query.id, depth: Number(query.depth || 1), limit: LIMIT });
      noteTypes(result.nodes.map((n) => n.type));
      drawNeighbourhood(canvas, result, nx, query.type, open);
    } catch (error) {
      canvas.replaceChildren(nx.problem(error));
    }
    await entityPanel(side, query.id, nx, (id) => h("a", { href: "#/" + route({ ...query, id }) }, id));
  }

  async function startingPoints(canvas, nx, open) {
    const { h } = nx;
    try {
      const report = await nx.call("get_entropy_report", {});
      canvas.replaceChildren(
        h("p", {}, `${report.entities} entities, ${report.relations} relations. Search above, or start from the most connected:`),
        h("ul", { class: "hubs" }, report.hubs.hubs.map((hub) => h("li", {}, h("a", { href: "#", onclick: (e) => (e.preventDefault(), open(hub.id)) }, hub.name), h("span", { class: "muted" }, ` ${hub.degree} relations`)))),
      );
    } catch (error) {
      canvas.replaceChildren(nx.problem(error));
    }
  }

  function drawNeighbourhood(container, result, nx, typeFilter, onSelect) {
    const { h } = nx;
    const nodes = result.nodes.filter((n) => n.distance === 0 || !typeFilter || n.type === typeFilter);
    const kept = new Set(nodes.map((n) => n.id));
    const edges = result.relations.filter((r) => kept.has(r.src) && kept.has(r.dst)).map((r) => ({ src: r.src, dst: r.dst, label: r.rel }));
    const note = h("p", { class: "muted" }, `${nodes.length} entities within ${result.depth} hop${result.depth > 1 ? "s" : ""} of `, h("strong", {}, result.id), result.truncated ? ` (the first ${nodes.length}: there are more)` : "");
    const frame = h("div");
    container.replaceChildren(note, frame);
    nx.graph(frame, {
      nodes: nodes.map((n) => ({ id: n.id, label: n.name, type: n.type, distance: n.distance })),
      edges,
      selected: result.id,
      onSelect,
    });
  }

  async function entityPanel(side, id, nx, entityLink) {
    const { h } = nx;
    nx.loading(side);
    try {
      const detail = await nx.call("get_entity", { id });
      const e = detail.entity;
      const relation = (r, outgoing) => h("li", {}, outgoing ? "→ " : "← ", h("span", { class: "chip" }, r.rel), " ", entityLink(outgoing ? r.dst : r.src), r.context ? h("div", { class: "muted" }, r.context) : "");
      side.replaceChildren(
        h(
          "div",
          { class: "panel" },
          h("h2", { "data-entity": e.id }, e.name),
          h("div", { class: "row" }, h("span", { class: "chip" }, e.type), h("span", { class: "muted" }, `${e.category} · ${e.id}`)),
          h("div", { class: "markdown" }, nx.md(e.desc)),
          e.tags.length ? h("div", {}, nx.chips(e.tags)) : "",
          e.observations && e.observations.length ? h("ul", {}, e.observations.map((o) => h("li", {}, o))) : "",
          h("h3", {}, `Relations from it (${detail.outgoing.length})`),
          h("ul", { class: "relations out" }, detail.outgoing.map((r) => relation(r, true))),
          h("h3", {}, `Relations to it (${detail.incoming.length})`),
          h("ul", { class: "relations in" }, detail.incoming.map((r) => relation(r, false))),
        ),
      );
    } catch (error) {
      side.replaceChildren(nx.problem(error));
    }
  }

  async function entropy(body, nx, query) {
    const { h } = nx;
    nx.loading(body);
    let r;
    try {
      r = await nx.call("get_entropy_report", {});
    } catch (error) {
      body.replaceChildren(nx.problem(error));
      return;
    }
    const link = (id) => h("a", { href: "#/" + route({ tab: "explore", id }) }, id);
    const finding = (title, f, extra) =>
      h("div", { class: "panel" }, h("h2", {}, `${title}: ${f.count}`), h("p", { class: "muted" }, f.suggestion), extra || (f.ids && f.ids.length ? h("p", {}, f.ids.map((id, i) => [i ? ", " : "", link(id)])) : ""));
    body.replaceChildren(
      h("div", { class: "panel" }, h("p", {}, r.summary), h("p", { class: "muted" }, `density ${r.density}, stale after ${r.stale_days} days`)),
      finding("Orphans", r.orphans),
      finding("Stale", r.stale),
      finding("Cut-off groups", r.components, h("p", {}, `largest ${r.components.largest}; sizes ${r.components.sizes.join(", ")}`, h("br"), r.components.ids.map((id, i) => [i ? ", " : "", link(id)]))),
      h("div", { class: "panel" }, h("h2", {}, "Hubs"), h("p", { class: "muted" }, r.hubs.suggestion), h("ul", {}, r.hubs.hubs.map((x) => h("li", {}, link(x.id), ` ${x.name}: ${x.degree} (${x.outgoing} out, ${x.incoming} in)`)))),
      finding("Look-alike names", r.duplicates, h("ul", {}, r.duplicates.groups.map((g) => h("li", {}, g.ids.map((id, i) => [i ? " ≈ " : "", link(id)]), ` (${nx.number(g.similarity, 2)})`)))),
      finding("Relations to missing entities", r.dangling, h("ul", {}, r.dangling.relations.map((d) => h("li", {}, `${d.src} -${d.rel}-> ${d.dst} (missing ${d.missing.join(", ")}, ${d.source})`)))),
      finding("Unreadable lines", r.corrupt_lines, h("ul", {}, r.corrupt_lines.lines.map((c) => h("li", {}, `${c.file}:${c.line}: ${c.error}`)))),
    );
  }

  async function mermaid(body, nx, query) {
    const { h } = nx;
    nx.loading(body);
    try {
      const args = query.id ? { format: "mermaid", root: query.id, depth: Number(query.depth || 2), max_nodes: 300 } : { format: "mermaid", max_nodes: 300 };
      const out = await nx.call("export_graph", args);
      const code = h("pre", { class: "mermaid-source" }, out.content);
      body.replaceChildren(
        h("p", { class: "muted" }, `${out.entities} entities and ${out.relations} relations${query.id ? ` around ${query.id}` : ""}${out.truncated ? " (cut: there are more)" : ""}. Paste into any Mermaid renderer.`),
        h("button", { type: "button", onclick: () => navigator.clipboard && navigator.clipboard.writeText(out.content) }, "Copy"),
        code,
      );
    } catch (error) {
      body.replaceChildren(nx.problem(error));
    }
  }
})();
