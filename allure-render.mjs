// Renders the acceptance report and evaluates its quality gate in one pass, so that the gate's
// verdict is part of the report (its Quality Gates tab and quality-gate.json) and not only an
// exit status. `allure generate` never evaluates the gate (only `allure run` and
// `allure quality-gate` do), which left a NOT ACCEPTED run's report with an empty gate.
// This does what `allure run` does after its command, through @allurereport/core's exported
// API: read the results, validate them against allurerc.mjs's qualityGate, hand the results to
// the report, finish it.
//
// Usage: node allure-render.mjs CONFIG RESULTS
// Exit status: 0 the gate passed, 1 it failed (its lines on standard error), 3 rendering failed.
import {
  AllureReport,
  filterFailedQualityGateResults,
  readConfig,
  stringifyQualityGateResults,
} from "@allurereport/core";

const [configPath, results] = process.argv.slice(2);
if (!configPath || !results) {
  console.error("usage: node allure-render.mjs CONFIG RESULTS");
  process.exit(3);
}

let failed = [];
try {
  const config = await readConfig(process.cwd(), configPath, {});
  const report = new AllureReport(config);
  await report.start();
  await report.readDirectory(results);
  if (report.hasQualityGate) {
    const trs = await report.store.allTestResults({ includeRetries: false });
    const { results: gate } = await report.validate({ trs });
    if (gate.length) {
      report.realtimeDispatcher.sendQualityGateResults(gate);
    }
    failed = filterFailedQualityGateResults(gate);
    if (failed.length) {
      console.error(stringifyQualityGateResults(gate));
    }
  }
  await report.done();
} catch (error) {
  console.error(`rendering failed: ${error?.stack || error}`);
  process.exit(3);
}
process.exit(failed.length ? 1 : 0);
