/* The one place the memory pages read the memory tools' results. The names are the Exocortex design's
 * (issue 15's table); a renamed field is a one-line change here. Each `??` fallback reads the names the
 * tools used before issue 15, and can go once every install has the design's.
 */
"use strict";
Nexus.memoryFields = (() => {
  // get_memory, and each item of recall_memories / list_memories
  const memory = (m) => ({
    id: m.id,
    summary: m.summary,
    content: m.content,
    type: m.type ?? m.memory_type,
    context: m.context,
    tags: m.tags ?? [],
    created: m.created_at,
    updated: m.updated_at,
    archived: m.archived ?? false, // added by Nexus: left out of recall and lists unless asked for
    similarity: m.similarity,
    score: m.score, // added by Nexus: similarity plus the exact-term boost
  });
  const brief = (id, summary) => ({ id, summary: summary ?? id });
  return {
    memory,
    // recall_memories: {memories: [...], total_found}
    recalled: (r) => ({ memories: (r.memories ?? r.results ?? []).map(memory), found: r.total_found }),
    // list_memories: {memories, total_count, has_more}
    listed: (r) => ({ memories: (r.memories ?? []).map(memory), total: r.total_count, more: r.has_more }),
    // get_memory_links: {memory_id, links: [{target_id, target_summary, relation_type, reason, created_at}], incoming}
    links: (r) => ({
      outgoing: (r.links ?? r.outgoing ?? []).map((l) => ({
        ...brief(l.target_id, l.target_summary),
        relation: l.relation_type,
        reason: l.reason,
      })),
      incoming: (r.incoming ?? []).map((l) => ({ ...brief(l.source_id, l.source_summary), relation: l.relation_type, reason: l.reason })),
    }),
    // explore_related: {memory_id, linked: [{id, summary, relation_type, reason}], by_tag: [{id, summary, shared_tags}],
    // by_context: [{id, summary, context}]}
    related: (r) => ({
      linked: (r.linked ?? []).map((x) => ({ ...brief(x.id ?? x.memory?.id, x.summary ?? x.memory?.summary), relation: x.relation_type, direction: x.direction })),
      byTag: (r.by_tag ?? []).map((x) => ({ ...brief(x.id ?? x.memory?.id, x.summary ?? x.memory?.summary), shared: x.shared_tags ?? [] })),
      byContext: (r.by_context ?? []).map((x) => brief(x.id, x.summary)),
    }),
    // analyze_knowledge: {total_memories, health_score, issues: [{type, severity, message, affected_memory_ids,
    // suggested_action}], suggestions, stats: {unlinked_memories, memories_per_context}}
    report: (r) => ({
      total: r.total_memories,
      score: r.health_score,
      suggestions: r.suggestions ?? [],
      unlinked: r.stats?.unlinked_memories,
      perContext: r.stats?.memories_per_context ?? {},
      issues: (r.issues ?? []).map((i) => ({
        type: i.type ?? i.kind,
        severity: i.severity,
        message: i.message ?? i.description,
        affected: i.affected_memory_ids ?? i.affected_ids ?? [],
        action: i.suggested_action,
        details: i.details ?? [], // added by Nexus: e.g. the groups of similar tags, most used spelling first
      })),
    }),
    // get_stats: {total_memories, memories_by_type, contexts: [{name, count}], tags: [{name, count}], ...}
    stats: (r) => ({
      total: r.total_memories,
      byType: r.memories_by_type ?? r.by_type ?? {},
      contexts: (r.contexts ?? []).map((c) => c.name),
      tags: (r.tags ?? r.top_tags ?? []).map((t) => t.name),
    }),
    // the issue types of analyze_knowledge the health page offers a fix for
    issue: { similarTags: "similar_tags", unlinked: "low_connectivity", untagged: "orphan_memories" },
    types: ["insight", "success", "failure", "decision", "note"],
    relations: ["related", "supersedes", "contradicts", "extends", "depends_on"],
  };
})();
