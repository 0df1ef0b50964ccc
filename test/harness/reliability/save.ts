// Used by the reliability tests: writes a scenario's figures to the ignored
// .bench-out/reliability/ folder. The tracked RELIABILITY.md is rendered on purpose
// (`npm run reliability:report`), so a test run leaves the tree unmodified; set
// JETLOOP_RELIABILITY_REPORT=1 to render it after each scenario as well.
import { writeReliabilityReport } from "../../../scripts/reliability-report.js";
import { writeScenarioRecord, type ScenarioRecord } from "./figures.js";

export function saveRecord(record: ScenarioRecord): void {
  writeScenarioRecord(record);
  if (process.env.JETLOOP_RELIABILITY_REPORT === "1") writeReliabilityReport();
}
