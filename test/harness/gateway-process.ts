// `jetloop gateway` as a process of its own (token auth), so that its memory is its own
// to measure: the header flood and the pipelining tests sample its RSS.
import { spawn, type ChildProcess } from "node:child_process";

export interface GatewayProcess {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function startGatewayProcess(options: { readonly server: string; readonly namespace: string; readonly token: string; readonly args?: readonly string[] }): Promise<GatewayProcess> {
  const proc: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", "src/cli/main.ts", "gateway", "--listen", "127.0.0.1:0", "--auth-token-env", "JL_GATEWAY_TOKEN", "--server", options.server, "--namespace", options.namespace, ...(options.args ?? [])],
    { env: { ...process.env, JL_GATEWAY_TOKEN: options.token }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.stderr!.on("data", (b: Buffer) => (err += b.toString()));
    proc.once("exit", (code) => reject(new Error(`the gateway exited (${code}): ${err}`)));
  });
  return {
    url,
    pid: proc.pid!,
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    },
  };
}
