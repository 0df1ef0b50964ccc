/**
 * How the long-running commands (`gateway`, `dev`) log: lines for a person at a terminal
 * (pino-pretty), one JSON object a line for a machine (pino's own), `--log-format` to choose.
 * Logs go to stderr (stdout carries the command's own lines: the URLs, the sessions), so the
 * default follows stderr: a terminal gets pretty lines, a file or a pipe JSON.
 */
import { pino, type Logger } from "pino";
import pretty from "pino-pretty";
import { UsageError } from "../errors.js";
import { traceLogFields } from "../telemetry/logs.js";

export type LogFormat = "pretty" | "json";

/** The flag, for a command's parseArgs options. */
export const logFormatFlag = { "log-format": { type: "string" } } as const;

/** The --log-format value, checked; absent, what stderr is (`isTTY` as the process has it). */
export function logFormat(value: string | undefined, stderrIsTty: boolean = process.stderr.isTTY === true): LogFormat {
  if (value === undefined) return stderrIsTty ? "pretty" : "json";
  if (value !== "pretty" && value !== "json") throw new UsageError(`--log-format ${JSON.stringify(value)} is not pretty or json`);
  return value;
}

/**
 * The command's logger, at info (a command a person started should say what happens to
 * it; the library's own default is warn). Written synchronously to stderr either way, so
 * the last lines before an exit are not lost in a buffer.
 */
export function commandLogger(format: LogFormat, name: string): Logger {
  const options = { name, level: "info", mixin: traceLogFields };
  if (format === "json") return pino(options, pino.destination({ fd: 2, sync: true }));
  return pino(options, pretty({ destination: 2, sync: true, colorize: process.stderr.isTTY === true, translateTime: "SYS:HH:MM:ss", ignore: "pid,hostname", singleLine: true }));
}
