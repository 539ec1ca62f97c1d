/* Memories: search as the assistant recalls (recall_memories' ranking, scores shown), list with filters and
 * paging, and one memory with its links, related memories, edits, links, delete and merge.
 * The views `search` and `memory` are also what MCP Apps clients show for recall_memories and get_memory.
 */
"use strict";
(() => {
  const F = Nexus.memoryFields;
  const PAGE = 25;
  const route = (query) => `memory/memories${query ? "?" + new URLSearchParams(query) : ""}`;
  const memoryRoute = (id) => `memory/memories/m/${encodeURIComponent(id)}`;
  /** A memory's title: its first line without Markdown marks (the summary runs on into the body). */
  const title = (m) => {
    const line = (m.content || m.summary || m.id).split("\n").find((l) => l.trim()) || m.id;
    const plain = line.replace(/^\s*(#+|[-*>]|\d+[.)])\s*/, "").replace(/[*_`]/g, "").trim();
    return plain.length > 120 ? plain.slice(0, 119) + "…" : plain;
  };

  Nexus.page("memory/memories", {
    render(root, { path, query }, nx) {
      if (path[0] === "m" && path[1]) return showMemory(root, path[1], nx);
      return searchPage(root, query, nx);
    },
    views: {
      search: (root, result, nx) => {
        const list = nx.h("div");
        root.replaceChildren(list);
        renderResults(list, F.recalled(result).memories, nx, { scores: true, back: () => Nexus.pages["memory/memories"].views.search(root, result, nx) });
      },
      memory: (root, result, nx) => renderMemory(root, F.memory(result), nx, {}),
    },
  });

  async function searchPage(root, q, nx) {
    const { h } = nx;
    const text = h("input", { type: "search", name: "q", value: q.q || "", placeholder: "Search by meaning: a problem, an error, a question…", autofocus: true });
    const context = h("select", { name: "context" }, nx.option("", "any project"), q.context ? nx.option(q.context, q.context, q.context) : "");
    const tagList = h("datalist", { id: "memory-tags" });
    const type = h("select", { name: "type" }, nx.option("", "any type"), F.types.map((t) => nx.option(t, t, q.type)));
    const tag = h("input", { name: "tag", value: q.tag || "", placeholder: "tag", list: "memory-tags", size: 14 });
    const form = h(
      "form",
      {
        class: "filters",
        role: "search",
        onsubmit(event) {
          event.preventDefault();
          const fields = { q: text.value.trim(), context: context.value, type: type.value, tag: tag.value.trim() };
          nx.go(route(Object.fromEntries(Object.entries(fields).filter(([, v]) => v))));
        },
      },
      text,
      context,
      type,
      tag,
      tagList,
      h("button", { type: "submit", class: "primary" }, "Search"),
    );
    const results = h("div", { class: "results-area" });
    root.append(h("h1", {}, "Memories"), form, results);
    nx.call("get_stats", {}).then(
      (answer) => {
        const stats = F.stats(answer);
        context.append(...stats.contexts.filter((c) => c !== q.context).map((c) => nx.option(c, c)));
        tagList.append(...stats.tags.map((t) => h("option", { value: t })));
      },
      (error) => root.insertBefore(nx.problem(error), results),
    );
    const filters = {
      context_filter: q.context || null,
      tag_filter: q.tag ? [q.tag] : null,
      type_filter: q.type || null,
    };
    nx.loading(results);
    try {
      if (q.q) {
        const found = F.recalled(await nx.call("recall_memories", { query: q.q, limit: 20, ...filters }));
        const close = found.memories.filter((m) => (m.similarity ?? 1) >= FLOOR);
        const weak = found.memories.filter((m) => (m.similarity ?? 1) < FLOOR);
        results.replaceChildren(h("p", { class: "muted" }, close.length ? `${close.length} close by meaning (score = similarity + exact-term boost)` : "Nothing close by meaning."));
        if (close.length) renderResults(results, close, nx, { scores: true, keep: true });
        if (weak.length) {
          const folded = h("details", { class: "weak" }, h("summary", {}, `${weak.length} weaker ${weak.length === 1 ? "match" : "matches"} (similarity below ${FLOOR})`));
          results.append(folded);
          renderResults(folded, weak, nx, { scores: true, keep: true });
        }
      } else {
        const offset = Math.max(0, parseInt(q.offset || "0", 10) || 0);
        const page = F.listed(await nx.call("list_memories", { limit: PAGE, offset, ...filters }));
        results.replaceChildren();
        renderResults(results, page.memories, nx, { keep: true });
        const go = (to) => route({ ...q, offset: String(to) });
        results.append(
          h(
            "div",
            { class: "pager" },
            offset > 0 ? h("a", { href: "#/" + go(Math.max(0, offset - PAGE)) }, "← newer") : "",
            h("span", { class: "muted" }, page.total ? `${offset + 1}–${offset + page.memories.length} of ${page.total}` : "no memories match"),
            page.more ? h("a", { href: "#/" + go(offset + PAGE) }, "older →") : "",
          ),
        );
      }
    } catch (error) {
      results.replaceChildren(nx.problem(error));
    }
  }

  const FLOOR = 0.2; // similarity under which a result is folded away: by then it rarely shares the meaning

  function renderResults(container, memories, nx, { scores = false, keep = false, back } = {}) {
    const { h } = nx;
    if (!keep) container.replaceChildren();
    if (!memories.length) {
      container.append(h("p", { class: "muted" }, "Nothing found."));
      return;
    }
    container.append(
      h(
        "ul",
        { class: "results" },
        memories.map((m) =>
          h(
            "li",
            { "data-memory": m.id },
            h("div", {}, nx.link(m.summary || m.id, memoryRoute(m.id), () => openMemory(container, m.id, nx, back))),
            h(
              "div",
              { class: "meta" },
              scores ? h("span", { class: "score", title: "similarity of meaning (score with the exact-term boost)" }, `${nx.number(m.similarity, 3)}${m.score != null ? ` (score ${nx.number(m.score, 3)})` : ""}`) : "",
              h("span", { class: "chip" }, m.type),
              h("span", {}, m.context),
              nx.chips(m.tags),
              h("span", {}, nx.when(m.created)),
            ),
          ),
        ),
      ),
    );
  }

  async function openMemory(root, id, nx, back) {
    nx.loading(root);
    try {
      renderMemory(root, F.memory(await nx.call("get_memory", { memory_id: id })), nx, { back });
    } catch (error) {
      root.replaceChildren(nx.problem(error));
    }
  }

  async function showMemory(root, id, nx) {
    nx.loading(root);
    try {
      await renderMemory(root, F.memory(await nx.call("get_memory", { memory_id: id })), nx, {});
    } catch (error) {
      root.replaceChildren(nx.link("← Memories", route()), nx.problem(error));
    }
  }

  /** One memory: its content, then links, related memories and the changes the grants allow. */
  async function renderMemory(root, m, nx, { back }) {
    const { h } = nx;
    const reload = () => (nx.mode === "console" ? showMemory(root, m.id, nx) : openMemory(root, m.id, nx, back));
    const status = h("div", { class: "status" });
    const linksBox = h("div", {}, h("p", { class: "muted" }, "Loading links…"));
    const relatedBox = h("div", {}, h("p", { class: "muted" }, "Loading related memories…"));
    const nav = nx.mode === "console" ? nx.link("← Memories", route()) : back ? h("a", { href: "#", onclick: (e) => (e.preventDefault(), back()) }, "← results") : "";
    root.replaceChildren(
      h("div", { class: "row" }, nav),
      h("h1", { "data-memory": m.id }, title(m)),
      h(
        "div",
        { class: "row meta" },
        h("span", { class: "chip" }, m.type),
        m.archived ? h("span", { class: "chip archived" }, "archived") : "",
        h("span", {}, "project ", h("strong", {}, m.context)),
        h("span", { class: "tags" }, nx.chips(m.tags)),
        h("span", { class: "muted" }, `created ${nx.when(m.created)}`, m.updated ? ` · updated ${nx.when(m.updated)}` : ""),
        h("code", { class: "muted" }, m.id),
      ),
      status,
      h(
        "div",
        { class: "columns" },
        h("div", {}, h("div", { class: "panel markdown content" }, nx.md(m.content)), editPanel(m, nx, status, reload), dangerPanel(m, nx, status, reload)),
        h("div", {}, h("div", { class: "panel" }, h("h2", {}, "Links"), linksBox), h("div", { class: "panel" }, h("h2", {}, "Related"), relatedBox)),
      ),
    );
    const open = (id) => () => openMemory(root, id, nx, back);
    const [links, related] = await Promise.allSettled([
      nx.call("get_memory_links", { memory_id: m.id }),
      nx.call("explore_related", { memory_id: m.id }),
    ]);
    linksBox.replaceChildren(links.status === "fulfilled" ? renderLinks(m, F.links(links.value), nx, status, reload, open) : nx.problem(links.reason));
    relatedBox.replaceChildren(related.status === "fulfilled" ? renderRelated(F.related(related.value), nx, open) : nx.problem(related.reason));
  }

  async function act(status, nx, work, done) {
    status.replaceChildren(nx.h("p", { class: "muted" }, "Working…"));
    try {
      const message = await work();
      status.replaceChildren(nx.h("div", { class: "notice" }, message));
      if (done) await done();
    } catch (error) {
      status.replaceChildren(nx.problem(error));
    }
  }

  function editPanel(m, nx, status, reload) {
    const { h } = nx;
    if (!nx.granted("update_memory")) return h("p", { class: "muted" }, "Editing is not granted: ", nx.refusal("update_memory"));
    const content = h("textarea", { name: "content" }, m.content);
    const tags = h("input", { name: "tags", value: m.tags.join(", "), size: 40 });
    const type = h("select", { name: "memory_type" }, F.types.map((t) => nx.option(t, t, m.type)));
    const archived = h("input", { type: "checkbox", name: "archived", checked: m.archived });
    const form = h(
      "form",
      {
        class: "edit",
        onsubmit(event) {
          event.preventDefault();
          const args = { memory_id: m.id };
          if (content.value !== m.content) args.content = content.value;
          const newTags = tags.value.split(",").map((t) => t.trim()).filter(Boolean);
          if (newTags.join("\n") !== m.tags.join("\n")) args.tags = newTags;
          if (type.value !== m.type) args.memory_type = type.value;
          if (archived.checked !== m.archived) args.archived = archived.checked;
          act(status, nx, async () => {
            if (Object.keys(args).length === 1) return "Nothing changed.";
            await nx.call("update_memory", args);
            return "Saved.";
          }, reload);
        },
      },
      h("label", { class: "field" }, "Content (Markdown)", content),
      h("div", { class: "row" }, h("label", { class: "field" }, "Tags, comma-separated", tags), h("label", { class: "field" }, "Type", type)),
      h("label", { class: "check" }, archived, " Archived: left out of searches and lists unless asked for"),
      h("button", { type: "submit", class: "primary" }, "Save changes"),
    );
    return h("details", { class: "panel" }, h("summary", {}, "Edit"), form);
  }

  function dangerPanel(m, nx, status, reload) {
    const { h } = nx;
    const sources = h("input", { name: "merge", placeholder: "ids of memories to fold into this one, comma-separated", size: 50 });
    const refusedNote = (tool) => (nx.granted(tool) ? "" : h("span", { class: "muted" }, ` (${nx.refusal(tool)})`));
    const remove = nx.confirmButton("Delete this memory", "Click again to delete", () =>
      act(status, nx, async () => {
        await nx.call("delete_memory", { memory_id: m.id });
        if (nx.mode === "console") setTimeout(() => nx.go(route()), 800);
        return "Deleted.";
      }),
    );
    const merge = h(
      "form",
      {
        class: "row",
        onsubmit(event) {
          event.preventDefault();
          const ids = sources.value.split(/[\s,]+/).filter(Boolean);
          act(status, nx, async () => {
            await nx.call("merge_memories", { target_id: m.id, source_ids: ids });
            return `Merged ${ids.length} into this memory.`;
          }, reload);
        },
      },
      sources,
      h("button", { type: "submit", class: "danger" }, "Merge into this"),
    );
    return h("details", { class: "panel" }, h("summary", {}, "Delete or merge"), h("div", { class: "row" }, remove, refusedNote("delete_memory")), merge, refusedNote("merge_memories"));
  }

  function renderLinks(m, links, nx, status, reload, open) {
    const { h } = nx;
    const canWrite = nx.granted("link_memories");
    const row = (l, arrow, outgoing) =>
      h(
        "li",
        { "data-link": l.id },
        h("span", { class: "chip" }, `${arrow} ${l.relation}`),
        " ",
        nx.link(l.summary, memoryRoute(l.id), open(l.id)),
        l.reason ? h("div", { class: "muted" }, l.reason) : "",
        outgoing && nx.granted("unlink_memories")
          ? h("button", { type: "button", onclick: () => act(status, nx, async () => (await nx.call("unlink_memories", { source_id: m.id, target_id: l.id, relation_type: l.relation }), "Unlinked."), reload) }, "Unlink")
          : "",
      );
    const target = h("input", { name: "target", placeholder: "id of the memory to link to", size: 38 });
    const relation = h("select", { name: "relation" }, F.relations.map((r) => nx.option(r, r)));
    const reason = h("input", { name: "reason", placeholder: "why", size: 24 });
    const form = canWrite
      ? h(
          "form",
          {
            class: "row",
            onsubmit(event) {
              event.preventDefault();
              act(status, nx, async () => {
                await nx.call("link_memories", { source_id: m.id, target_id: target.value.trim(), relation_type: relation.value, reason: reason.value });
                return "Linked.";
              }, reload);
            },
          },
          target,
          relation,
          reason,
          h("button", { type: "submit" }, "Link"),
        )
      : "";
    return h(
      "div",
      {},
      h("h3", {}, "From this memory"),
      links.outgoing.length ? h("ul", { class: "links out" }, links.outgoing.map((l) => row(l, "→", true))) : h("p", { class: "muted" }, "none"),
      h("h3", {}, "To this memory"),
      links.incoming.length ? h("ul", { class: "links in" }, links.incoming.map((l) => row(l, "←", false))) : h("p", { class: "muted" }, "none"),
      form,
    );
  }

  function renderRelated(related, nx, open) {
    const { h } = nx;
    const list = (items, extra) =>
      items.length ? h("ul", {}, items.map((x) => h("li", {}, nx.link(x.summary, memoryRoute(x.id), open(x.id)), extra ? extra(x) : ""))) : h("p", { class: "muted" }, "none");
    return h(
      "div",
      { class: "related" },
      h("h3", {}, "Linked"),
      list(related.linked, (x) => h("span", { class: "muted" }, ` (${x.direction === "incoming" ? "←" : "→"} ${x.relation})`)),
      h("h3", {}, "Sharing tags"),
      list(related.byTag, (x) => h("span", {}, " ", nx.chips(x.shared))),
      h("h3", {}, "Same project"),
      list(related.byContext),
    );
  }
})();
