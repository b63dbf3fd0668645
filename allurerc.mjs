// Allure 3 configuration of the acceptance report (npm package `allure`, see package.json).
//
//   npx allure generate reports/allure-results      # → reports/allure-report
//   npx allure open reports/allure-report
//   npx allure quality-gate reports/allure-results  # exit 1: the release is not accepted
//
// The report's name carries the run's verdict from run-summary.json, the tree is the page
// (epic → doc section → check), categories are the doc's sections, and the history of
// earlier runs is kept in reports/allure-history.jsonl (appended by every `generate`).
// RLARK_REPORTS_DIR points all of it at another reports directory (the tests use it).
import { readFileSync } from "node:fs";
import { join } from "node:path";

const reports = process.env.RLARK_REPORTS_DIR || "reports";

// Node 20 (Debian 12's nodejs) lacks Iterator.prototype.toArray, which allure's
// quality-gate command calls; Node >= 22 has it and this does nothing there.
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

function verdictName() {
  try {
    const s = JSON.parse(readFileSync(join(reports, "run-summary.json"), "utf-8"));
    const word = { passed: "ACCEPTED", interrupted: "INTERRUPTED" }[s.verdict] || "NOT ACCEPTED";
    const first = s.earliestFailure ? ` at ${s.earliestFailure.check}` : "";
    return `RLark acceptance: 在单个 GPU 节点上运行 RLinf — ${word}${first}`;
  } catch {
    return "RLark acceptance: 在单个 GPU 节点上运行 RLinf — no run-summary.json";
  }
}

const isProfile = (tr) =>
  tr.labels.some((l) => l.name === "acceptance" && l.value === "profile");

// A failed check of the profile as it is means the release is not accepted; a failing
// self-check is reported by its own category and the run's exit status.
const notAccepted = {
  rule: "notAccepted",
  message: ({ actual }) =>
    `NOT ACCEPTED: ${actual} check scenario(s) of the profile failed (see run-summary.json)`,
  successMessage: () => "accepted: every check scenario of the profile passed",
  validate: async ({ trs, expected }) => {
    const failed = trs.filter((tr) => isProfile(tr) && ["failed", "broken"].includes(tr.status));
    return { success: failed.length <= expected, actual: failed.length, testResults: failed.map((t) => t.id) };
  },
};

const name = verdictName();

export default {
  name,
  output: join(reports, "allure-report"),
  historyPath: join(reports, "allure-history.jsonl"),
  appendHistory: true,
  plugins: {
    awesome: {
      options: {
        reportName: name,
        singleFile: false,
        groupBy: ["epic", "feature", "story"],
        stepTreeExpansion: "expand_failed_only",
        defaultSortBy: "name,asc", // the sections are numbered in the page's order
        reportLanguage: "en",
      },
    },
  },
  categories: {
    rules: [
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
