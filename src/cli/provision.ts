import { connect } from "../bus.js";
import { parseArgs } from "node:util";
import { connectionFlags, connectionHelp, connectOptions, parse, positiveInt } from "./args.js";

export const provisionHelp = `jetloop provision [--verify] [--replicas N] [--max-event-bytes N]

Creates or updates the events stream from streams/events.json, idempotently.
Prints each field that differed. A live stream that cannot take the declared
configuration (another storage or retention) is refused, never overwritten.

  --verify              report drift only; change nothing (exit 2 on drift)
  --replicas N          stream replicas (default: 3 in a cluster, else 1)
  --max-event-bytes N   byte cap of one event and the stream's max_msg_size (default 1048576)

${connectionHelp}`;

export async function provisionCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const { values } = parse(() => parseArgs({ args: argv, options: { ...connectionFlags, verify: { type: "boolean" }, replicas: { type: "string" }, "max-event-bytes": { type: "string" } }, strict: true }));
  if (values.help) {
    out(provisionHelp);
    return 0;
  }
  const maxEventBytes = positiveInt("max-event-bytes", values["max-event-bytes"]);
  const bus = await connect({ ...connectOptions(values), ...(maxEventBytes ? { maxEventBytes } : {}) });
  try {
    out(`provisioning stream ${bus.stream} (namespace ${bus.namespace}) on nats-server ${bus.serverVersion}…`);
    const report = await bus.provision({ mode: values.verify ? "verify" : "apply", replicas: positiveInt("replicas", values.replicas) });
    for (const d of report.drift) out(`  ${d.field}: live ${JSON.stringify(d.live)} → declared ${JSON.stringify(d.desired)}`);
    out(`stream ${report.stream}: ${report.action}`);
    return report.action === "drifted" ? 2 : 0;
  } finally {
    await bus.close();
  }
}
