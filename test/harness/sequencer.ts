// The order test files start in: the longest first, across every project (vitest's own
// sequencer runs one project after the other, so the CPU-bound unit files would only start
// once every integration file had, and the 46 s fuzz file would end the run alone). A file's
// length is its last duration in vitest's results cache; a file the cache does not know (a
// new file, or every file on a fresh clone such as CI's) is estimated from its size, per
// kind: an integration file spends its time waiting on servers and processes, about ten
// times a unit file of the same size (measured on one run: 0.5 s per KB on 2.10, 3.2 s on
// the newest server, whose files include the CLI and the browser; 0.19 s for unit files). Failed files
// still go first, as vitest does.
import { statSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const SECONDS_PER_KB = { unit: 0.2, servers: 2 };

export default class LongestFirst extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache, config } = this.ctx;
    const known = files.map((spec) => {
      const key = `${spec.project.name}:${relative(config.root, spec.moduleId)}`;
      const result = cache.getFileTestResults(key);
      const estimate = () => {
        const kb = (cache.getFileStats(key)?.size ?? statSync(spec.moduleId).size) / 1024;
        return kb * (spec.project.name === "unit" ? SECONDS_PER_KB.unit : SECONDS_PER_KB.servers) * 1000;
      };
      return { spec, failed: result?.failed === true, ms: result?.duration ?? estimate() };
    });
    const group = (s: TestSpecification) => s.project.config.sequence.groupOrder;
    known.sort((a, b) => group(a.spec) - group(b.spec) || Number(b.failed) - Number(a.failed) || b.ms - a.ms);
    return Promise.resolve(known.map((k) => k.spec));
  }
}

