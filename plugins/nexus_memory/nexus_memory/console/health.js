/* Health: analyze_knowledge's report, its issues linked to the memories concerned, and one-click fixes where
 * it suggests one: one spelling for tags that look alike, links for memories that have none.
 * Every fix is a series of the plugin's own tools (list_memories, update_memory, recall_memories,
 * link_memories), so it obeys the same grants and leaves the same audit records as an assistant's.
 */
"use strict";
(() => {
  const F = Nexus.memoryFields;
  const SHOWN = 30; // affected memories listed per issue
  const SUGGEST = 10; // unlinked memories offered a link at a time

  Nexus.page("memory/health", {
    async render(root, route, nx) {
      const { h } = nx;
      root.append(h("h1", {}, "Knowledge health"));
      const status = h("div", { class: "status" }, route.notice ? h("div", { class: "notice" }, route.notice) : "");
      const body = h("div");
      root.append(status, body);
      nx.loading(body, "Analysing…");
      let report;
      try {
        report = F.report(await nx.call("analyze_knowledge", {}));
      } catch (error) {
        body.replaceChildren(nx.problem(error));
        return;
      }
      const again = (notice) => {
        root.replaceChildren();
        return Nexus.pages["memory/health"].render(root, { ...route, notice }, nx);
      };
      body.replaceChildren(
        h(
          "div",
          { class: "panel row" },
          h(
            "div",
            { class: "health-score-box" },
            h("div", { class: "health-label" }, "Health score"),
            h("div", { class: "health-score" }, String(report.score), h("span", { class: "out-of" }, " / 100")),
            h("p", { class: "muted" }, "100 when every memory is tagged, linked to related ones, recent and consistently tagged; each issue below takes points off."),
          ),
          h(
            "dl",
            { class: "pairs" },
            h("dt", {}, "memories"),
            h("dd", {}, String(report.total)),
            report.unlinked != null ? [h("dt", {}, "without links"), h("dd", {}, String(report.unlinked))] : "",
            h("dt", {}, "projects"),
            h("dd", {}, Object.entries(report.perContext).map(([c, n]) => h("span", { class: "chip" }, `${c}: ${n}`))),
          ),
        ),
        report.issues.length ? h("h2", {}, `${report.issues.length} ${report.issues.length === 1 ? "issue" : "issues"}, most serious first`) : h("p", { class: "notice" }, "No issues."),
        ...[...report.issues].sort((a, b) => RANK[a.severity] - RANK[b.severity]).map((issue) => issuePanel(issue, nx, status, again)),
        // spread: replaceChildren, unlike h, does not flatten an array (it would print "[object HTMLHeadingElement]")
        ...(tips(report.suggestions).length ? [h("h2", {}, "Tips"), h("ul", { class: "suggestions" }, tips(report.suggestions).map((s) => h("li", {}, s)))] : []),
      );
      for (const list of body.querySelectorAll("ul.affected")) summaries(list, nx);
    },
  });

  const RANK = { high: 0, medium: 1, low: 2 };
  const TITLES = {
    orphan_memories: "Memories without tags",
    low_connectivity: "Memories not linked to others",
    stale_memories: "Old or superseded memories",
    similar_tags: "Tags that look like one tag spelled differently",
    archive_candidates: "Memories that may no longer help",
  };
  // What a person does here, in words (the tool's own advice names tools, for an assistant).
  const ADVICE = {
    orphan_memories: "open each memory below and add a few tags under Edit, so filters and related memories find it.",
    low_connectivity: "link memories that belong together: press the button below for suggestions to accept, or open a memory and link it to another.",
    stale_memories: "open each memory below and archive what no longer helps; archived memories stay findable when you ask for them.",
    similar_tags: "press the button to give every memory the most used spelling.",
    archive_candidates: "open each memory below and archive it under Edit if it no longer helps; archived memories stay findable when you ask for them.",
  };
  // An issue type this page does not know yet: a sentence, never the tool's advice (it names tools).
  const REVIEW = "open the memories below and review them.";
  /** The report's general suggestions a person can act on (those about the issues are the issues themselves). */
  function tips(suggestions) {
    const words = {
      "Don't forget to record failures too!": "Record what failed too, not only what worked: it saves the next attempt.",
      "Store what you learn with store_memory: fixes, failures, decisions and insights": "Nothing is stored yet: ask your assistant to remember fixes, failures, decisions and insights as you work.",
    };
    return suggestions.filter((s) => !s.startsWith("Address issues")).map((s) => words[s] || s.replace(/ \(memory_type '(\w+)'\)/, " (type: $1)"));
  }

  function issuePanel(issue, nx, status, again) {
    const { h } = nx;
    const shown = issue.affected.slice(0, SHOWN);
    return h(
      "div",
      { class: "panel issue", "data-issue": issue.type },
      h("h3", {}, h("span", { class: `badge severity-${issue.severity}` }, `${issue.severity} severity`), " ", TITLES[issue.type] || issue.type.replace(/_/g, " ")),
      h("p", {}, issue.message),
      h("p", { class: "advice" }, "What to do: ", ADVICE[issue.type] || REVIEW),
      fixes(issue, nx, status, again),
      h("details", {}, h("summary", {}, `${issue.affected.length} ${issue.affected.length === 1 ? "memory" : "memories"} concerned`), h("ul", { class: "affected" }, shown.map((id) => h("li", { "data-id": id }, nx.link(id, `memory/memories/m/${encodeURIComponent(id)}`)))), issue.affected.length > SHOWN ? h("p", { class: "muted" }, `and ${issue.affected.length - SHOWN} more`) : ""),
    );
  }

  /** Replace the ids of a list with the memories' summaries (one batch of get_memory calls). */
  async function summaries(list, nx) {
    const items = [...list.querySelectorAll("li[data-id]")];
    if (!items.length) return;
    const found = await nx.calls(items.map((li) => ({ tool: "get_memory", arguments: { memory_id: li.dataset.id } }))).catch(() => []);
    found.forEach((outcome, i) => {
      if (outcome.ok) items[i].querySelector("a").textContent = F.memory(outcome.result).summary;
    });
  }

  function fixes(issue, nx, status, again) {
    const { h } = nx;
    if (issue.type === F.issue.similarTags) {
      return h(
        "div",
        { class: "fixes" },
        issue.details.map((group) => {
          const [keep, ...others] = group.split(",").map((t) => t.trim()).filter(Boolean);
          return h(
            "div",
            { class: "row" },
            h("span", {}, nx.chips([keep, ...others])),
            h("button", { type: "button", class: "primary", onclick: () => run(status, nx, () => retag(keep, others, nx), again) }, `Use “${keep}” for all`),
          );
        }),
      );
    }
    if (issue.type === F.issue.unlinked) {
      const area = h("div", { class: "fixes" });
      area.append(h("button", { type: "button", onclick: () => suggestLinks(area, issue.affected.slice(0, SUGGEST), nx, status, again) }, `Suggest links for ${Math.min(SUGGEST, issue.affected.length)} of them`));
      return area;
    }
    return "";
  }

  async function run(status, nx, work, again) {
    status.replaceChildren(nx.h("p", { class: "muted" }, "Fixing…"));
    try {
      await again(await work());
    } catch (error) {
      status.replaceChildren(nx.problem(error));
    }
  }

  /** Every memory tagged with one of ``others`` gets ``keep`` instead, a page of update_memory calls at a time.
   * Tag filters match regardless of case, so a memory already retagged still matches ``others``: the memories
   * are all listed first, then only those carrying one of ``others`` as written are changed. */
  async function retag(keep, others, nx) {
    const found = [];
    for (let offset = 0; offset < 100000; offset += 100) {
      const page = F.listed(await nx.call("list_memories", { limit: 100, offset, tag_filter: others }));
      found.push(...page.memories);
      if (!page.more || !page.memories.length) break;
    }
    const stale = found.filter((m) => m.tags.some((t) => others.includes(t)));
    for (let start = 0; start < stale.length; start += 100) {
      const updates = stale.slice(start, start + 100).map((m) => ({
        tool: "update_memory",
        arguments: { memory_id: m.id, tags: [...new Set(m.tags.map((t) => (others.includes(t) ? keep : t)))] },
      }));
      const outcomes = await nx.calls(updates);
      const failed = outcomes.find((o) => !o.ok);
      if (failed) throw new nx.CallError(failed.error, { refused: failed.refused });
    }
    return `${stale.length} memories now use “${keep}”.`;
  }

  /** For each unlinked memory, the closest other memory by meaning (recall_memories), offered as a link. */
  async function suggestLinks(area, ids, nx, status, again) {
    const { h } = nx;
    nx.loading(area, "Looking for the closest memories…");
    const got = await nx.calls(ids.map((id) => ({ tool: "get_memory", arguments: { memory_id: id } })));
    const memories = got.filter((o) => o.ok).map((o) => F.memory(o.result));
    const recalls = await nx.calls(memories.map((m) => ({ tool: "recall_memories", arguments: { query: m.content.slice(0, 1000), limit: 3 } })));
    const pairs = [];
    memories.forEach((m, i) => {
      if (!recalls[i].ok) return;
      const best = F.recalled(recalls[i].result).memories.find((r) => r.id !== m.id);
      if (best) pairs.push({ from: m, to: best });
    });
    const link = (pair) => ({
      tool: "link_memories",
      arguments: { source_id: pair.from.id, target_id: pair.to.id, relation_type: "related", reason: `suggested by the console's health check (similarity ${nx.number(pair.to.similarity, 2)})` },
    });
    const linkAll = async (chosen) => {
      const outcomes = await nx.calls(chosen.map(link));
      const failed = outcomes.find((o) => !o.ok);
      if (failed) throw new nx.CallError(failed.error, { refused: failed.refused });
      return `Linked ${outcomes.length} ${outcomes.length === 1 ? "memory" : "memories"}.`;
    };
    area.replaceChildren(
      pairs.length
        ? h(
            "ul",
            { class: "suggested-links" },
            pairs.map((pair) =>
              h(
                "li",
                {},
                nx.link(pair.from.summary, `memory/memories/m/${encodeURIComponent(pair.from.id)}`),
                " → ",
                nx.link(pair.to.summary, `memory/memories/m/${encodeURIComponent(pair.to.id)}`),
                h("span", { class: "score" }, ` ${nx.number(pair.to.similarity, 2)} `),
                h("button", { type: "button", onclick: () => run(status, nx, () => linkAll([pair]), again) }, "Link"),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No suggestions."),
      pairs.length ? h("button", { type: "button", class: "primary", onclick: () => run(status, nx, () => linkAll(pairs), again) }, "Link all suggested") : "",
    );
  }
})();
