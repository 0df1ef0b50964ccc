// A parked entry's group headers and the durable it is kept under say the same thing or it
// is not an entry: generated over group names, partitions (in and past the range a stream
// can have) and durables that agree or disagree with them in each way.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parkHeaders, readParked, type ParkInput } from "../../src/parking/parked-entry.js";
import { partitionDurable } from "../../src/partition/partition-durable.js";
import { MAX_PARTITIONS } from "../../src/partition/partition.js";

const name = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);
const partition = fc.integer({ min: 0, max: 999 });

/** The durable an entry is kept under: its group's partition's, or another. */
const durableFor = (group: string, p: number) =>
  fc.oneof(
    fc.constant({ durable: partitionDurable(group, p), agrees: p < MAX_PARTITIONS }),
    partition.filter((q) => q !== p).map((q) => ({ durable: partitionDurable(group, q), agrees: false })),
    name.filter((g) => g !== group).map((g) => ({ durable: partitionDurable(g, p), agrees: false })),
    name.filter((d) => d !== partitionDurable(group, p)).map((d) => ({ durable: d, agrees: false })),
  );

const entry = (durable: string, group: { name: string; partition: number } | undefined): ParkInput => ({
  durable,
  journalSeq: 7,
  subject: "ns.journal.s._.step.StepDone",
  data: new Uint8Array([1]),
  deliveryCount: 1,
  reason: "terminated",
  errorCode: "TERMINATED",
  errorMessage: "x",
  group,
});

describe("a parked entry's group", () => {
  it("is read only when the durable it is kept under is that group's partition", () => {
    fc.assert(
      fc.property(
        name.chain((g) => partition.chain((p) => durableFor(g, p).map((d) => ({ g, p, ...d })))),
        ({ g, p, durable, agrees }) => {
          const e = readParked("held", 1, parkHeaders(entry(durable, { name: g, partition: p }), new Date()), new Uint8Array([1]));
          // A name that parses as this group's partition is the same durable, whichever way it was made.
          const same = durable === partitionDurable(g, p) && p < MAX_PARTITIONS;
          expect(e !== undefined).toBe(agrees || same);
          if (e) expect(e.group).toEqual({ name: g, partition: p });
        },
      ),
      { numRuns: 500 },
    );
  });

  it("an entry without group headers is read whatever its durable is called", () => {
    fc.assert(
      fc.property(fc.oneof(name, name.chain((g) => partition.map((p) => partitionDurable(g, p)))), (durable) => {
        const e = readParked("held", 1, parkHeaders(entry(durable, undefined), new Date()), new Uint8Array([1]));
        expect(e?.durable).toBe(durable);
        expect(e?.group).toBeUndefined();
      }),
    );
  });
});
