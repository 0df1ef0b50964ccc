// vitest globalSetup for the integration projects: provides the URL of a JetStream
// server to the test files (inject("natsUrl"), see context.ts). With NATS_URL set it
// uses that server; otherwise it starts one nats-server of the project's flavor
// (the project's env JETLOOP_NATS_SERVER, oldest | newest) and stops it on teardown:
// a process or a container, as the project's env JETLOOP_NATS_BACKEND says (backend.ts).
import type { TestProject } from "vitest/node";
import { harnessBackend } from "./backend.js";
import { serverFlavor, startServer, type ServerFlavor } from "./server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Client URL(s) of the shared server, comma-separated when several. */
    natsUrl: string;
    /** "oldest" | "newest" | "external" (NATS_URL) */
    natsServerFlavor: string;
    /** e.g. "2.10.27"; "unknown" for an external server. */
    natsServerVersion: string;
    /** "processes" | "containers" | "external" (NATS_URL) */
    natsServerBackend: string;
  }
}

function projectFlavor(project: TestProject): ServerFlavor {
  const fromProject = project.config.env?.JETLOOP_NATS_SERVER;
  if (fromProject === "oldest" || fromProject === "newest") return fromProject;
  return serverFlavor();
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.NATS_URL?.trim();
  if (external) {
    project.provide("natsUrl", external);
    project.provide("natsServerFlavor", "external");
    project.provide("natsServerVersion", "unknown");
    project.provide("natsServerBackend", "external");
    return () => Promise.resolve();
  }
  const flavor = projectFlavor(project);
  const backend = await harnessBackend();
  const server = await startServer({ flavor });
  project.provide("natsUrl", server.url);
  project.provide("natsServerFlavor", flavor);
  project.provide("natsServerVersion", server.version);
  project.provide("natsServerBackend", backend);
  if (backend === "containers") {
    const image = await (await import("./containers.js")).imageFor(flavor);
    console.log(`[${project.name}] nats-server ${server.version} (${flavor}) in containers, image ${image}; shared server at ${server.url}`);
  } else if (process.env.CI) {
    console.log(`[${project.name}] nats-server ${server.version} (${flavor}) at ${server.url}`);
  }
  return () => server.close();
}
