// Used by the reliability tests: writes a scenario's figures and re-renders
// RELIABILITY.md, so every run of the suite leaves the report current. Set
// JETLOOP_RELIABILITY_REPORT=0 to write the figures only.
import { writeReliabilityReport } from "../../../scripts/reliability-report.js";
import { writeScenarioRecord, type ScenarioRecord } from "./figures.js";

export function saveRecord(record: ScenarioRecord): void {
  writeScenarioRecord(record);
  if (process.env.JETLOOP_RELIABILITY_REPORT !== "0") writeReliabilityReport();
}
