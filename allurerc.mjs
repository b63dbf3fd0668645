// Allure 3 configuration of the acceptance report (npm package `allure`, see package.json).
// Render with `rlark-acceptance report [--reports-dir DIR] [--open]`: it renders into a fresh
// directory with allure-render.mjs, which evaluates the quality gate into the report, replaces
// the previous report whole, and exits with the gate's status.
//
// The report's name carries the verdict of the results being rendered (their executor.json,
// written by the run), the tree is the page (epic → doc section → each check once, its
// scenarios the check's steps), categories are the
// doc's sections, and the history of earlier runs is kept in <reports>/allure-history.jsonl
// (appended by every `generate`). RLARK_REPORTS_DIR names the reports directory,
// RLARK_RESULTS_DIR the results (default <reports>/allure-results), RLARK_REPORT_OUTPUT
// where the report goes (default <reports>/allure-report).
import { readFileSync } from "node:fs";
import { join } from "node:path";

const reports = process.env.RLARK_REPORTS_DIR || "reports";
const results = process.env.RLARK_RESULTS_DIR || join(reports, "allure-results");
const output = process.env.RLARK_REPORT_OUTPUT || join(reports, "allure-report");

// Node 20 (Debian 12's nodejs) lacks Iterator.prototype.toArray, which Allure's quality gate
// calls; Node >= 22 has it and this does nothing there.
const iteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([].values()));
if (typeof iteratorPrototype.toArray !== "function") {
  iteratorPrototype.toArray = function toArray() {
    return Array.from(this);
  };
}

const SECTIONS = [
  "§0 确认任务适合单节点运行",
  "准备 RLinf 运行信息",
  "Step 1 保留原有 RLinf 配置",
  "Step 2 添加 worker 角色",
  "Step 3 配置一个 Worker",
  "Step 4 填写运行命令",
  "Step 5 核对 YAML 并提交",
  "Step 6 确认任务开始运行",
];

// What the run wrote about its results (executor.json): never a run-summary.json of another run.
function executor() {
  try {
    return JSON.parse(readFileSync(join(results, "executor.json"), "utf-8"));
  } catch {
    return {}; // no record of a run in these results
  }
}

// The record of the run these results are of (run-summary.json beside them: a run writes
// both, and clears both when it starts), for the gate to give the earliest failing check's
// remedy and file:line as the record does.
function earliestFailure() {
  try {
    const summary = JSON.parse(readFileSync(join(reports, "run-summary.json"), "utf-8"));
    return summary.earliestFailure || null;
  } catch {
    return null; // a release's merged results, or no record: the check alone
  }
}

function verdictName() {
  return (
    executor().reportName ||
    `RLark acceptance: 在单个 GPU 节点上运行 RLinf — no run record in ${results}`
  );
}

// A release's merged results (executor.json names the release): the tree is profile → doc
// section → check, from the suite labels the merge wrote; one run's is the page's own.
const isRelease = Boolean(executor().release);

const isProfile = (tr) =>
  tr.labels.some((l) => l.name === "acceptance" && l.value === "profile");

const checkOf = (tr) =>
  labelOf(tr, "failedCheck") || (/^\[([^\]|-]+)/.exec(tr.name || "") || [])[1] || "?";
// In a release the check to start at is named with its profile: "site-b 6.2".
const whereOf = (tr) => [labelOf(tr, "profile"), checkOf(tr)].filter(Boolean).join(" ");
const labelOf = (tr, name) => (tr.labels.find((l) => l.name === name) || {}).value || "";
const notReached = (tr) =>
  tr.status === "skipped" && /^not (reached|finished)/.test(tr.message || tr.error?.message || "");

// What failed comes before what was not reached because of it; then the page's order. The
// check an interrupt stopped in ("not finished") is where the run stopped: with the failures.
const stoppedIn = (tr) => /^not finished/.test(tr.message || tr.error?.message || "");
const rank = (tr) => (["failed", "broken"].includes(tr.status) || stoppedIn(tr) ? 0 : 1);
const orderOf = (tr) => labelOf(tr, "feature") + " " + checkOf(tr) + " " + labelOf(tr, "profile");

// The release is not accepted when a check scenario of the profile as it is failed, broke,
// or was not reached (an earlier phase failed, the run was interrupted); failing
// self-checks are their own category. The message names the check to start at: the earliest
// that failed (or broke: an interrupt), else the earliest not reached.
const notAccepted = {
  rule: "notAccepted",
  message: ({ actual }) => `NOT ACCEPTED at ${actual}`,
  successMessage: () => "accepted: every check scenario of the profile passed",
  validate: async ({ trs, expected }) => {
    const bad = trs
      .filter((tr) => isProfile(tr) && (["failed", "broken"].includes(tr.status) || notReached(tr)))
      .sort((a, b) => rank(a) - rank(b) || orderOf(a).localeCompare(orderOf(b)));
    const what = `${bad.length} check(s) of the profile failed or were not reached`;
    const actual = bad.length ? `${whereOf(bad[0])}${causeOf(bad[0])} (${what})` : 0;
    return { success: bad.length <= expected, actual, testResults: bad.map((t) => t.id) };
  },
};

// " (site/job.yaml:31): <its message> → <its remedy>" when the record names this check the
// earliest failure: the gate says what run-summary.json and the terminal say.
function causeOf(tr) {
  const first = earliestFailure();
  if (!first || first.check !== checkOf(tr) || labelOf(tr, "profile")) return "";
  const at = first.location ? ` (${first.location})` : "";
  const said = first.message ? `: ${String(first.message).split("\n")[0]}` : "";
  return `${at}${said} → ${first.hint}`;
}

const name = verdictName();

export default {
  name,
  output,
  historyPath: join(reports, "allure-history.jsonl"),
  appendHistory: true,
  plugins: {
    awesome: {
      options: {
        reportName: name,
        singleFile: false,
        // One result per check (run/allure_results.py): the check is the tree's leaf, once.
        groupBy: isRelease ? ["parentSuite", "suite", "subSuite"] : ["epic", "feature"],
        stepTreeExpansion: "expand_failed_only",
        defaultSortBy: "name,asc", // the sections are numbered in the page's order
        reportLanguage: "en",
      },
    },
  },
  categories: {
    rules: [
      {
        name: "The run stopped outside the checks (an interrupt, a usage error)",
        matchers: { statuses: ["broken"], labels: { feature: "00 the run" } },
      },
      {
        name: "Self-checks of the harness (a changed copy of the profile)",
        matchers: { statuses: ["failed", "broken"], labels: { acceptance: "self-check" } },
      },
      ...SECTIONS.map((section, i) => ({
        name: `Not accepted: ${String(i + 1).padStart(2, "0")} ${section}`,
        matchers: {
          statuses: ["failed", "broken"],
          labels: { feature: `${String(i + 1).padStart(2, "0")} ${section}` },
        },
      })),
    ],
  },
  qualityGate: {
    use: [notAccepted],
    rules: [{ id: "release", notAccepted: 0 }],
  },
};
