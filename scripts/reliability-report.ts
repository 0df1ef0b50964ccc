// Renders RELIABILITY.md from the figures the reliability scenarios wrote to
// .bench-out/reliability/<run>/<scenario>.json (test/integration/reliability/ in the
// suite, scripts/reliability-soak.ts for longer runs).
//
//   npx tsx scripts/reliability-report.ts            # write RELIABILITY.md
//   npx tsx scripts/reliability-report.ts --stdout   # print it instead
//
// The suite calls renderReliabilityReport() itself after each scenario, so a test run
// leaves RELIABILITY.md up to date with the latest figures of every run it holds.
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FIGURES_DIR, readScenarioRecords, type FigureRow, type ScenarioRecord } from "../test/harness/reliability/figures.js";
import { REPO_ROOT } from "../test/harness/server.js";

export const REPORT_FILE = join(REPO_ROOT, "RELIABILITY.md");

interface ScenarioText {
  readonly title: string;
  /** Markdown: what the scenario does and what it asserts. */
  readonly method: string;
  /** Markdown: limits of the proof, settings, advice. */
  readonly notes?: string;
}

const SCENARIOS: Record<string, ScenarioText> = {
  "1-server-restart": {
    title: "1. Single server restarted under load",
    method: `A private nats-server (deploy/nats/single.conf) is stopped gracefully (SIGTERM) and
started again on the same ports and store directory while a producer appends at a fixed
pace (8 appends in flight, ack timeout 500 ms, publish deadline 30 s) and two subscribers
consume from the start of the journal: a live subscription (UI mode: the stream's feed,
gaps repaired from the journal; scenario 10), the same in namespace feed mode
(\`feed: "namespace"\`), and a durable consumer that acknowledges each delivery. Appends that fail with a typed error (none is
expected within the deadline) are published again, within the duplicate window (the
condition the error names for an unfenced append).
Afterwards the stream is read directly (not through jetloop) and compared with the event
ids the producer handed in.

Asserted: every append settles, none with an untyped error; the stream holds each event
exactly once; the live subscribers receive each exactly once (the namespace-mode one in
journal order); the durable subscriber
receives each at least once, and deduplicating its deliveries by event id leaves exactly
the published set; neither subscription ends with an error.`,
  },
  "2-leader-kill": {
    title: "2. Cluster stream leader killed under load (replicas 3)",
    method: `A three-node cluster from deploy/nats/cluster.conf (the file docker-compose.yml runs);
the events stream is provisioned with replicas 3. While a producer appends (16 in
flight, ack timeout 1 s, deadline 30 s), the stream leader (from
\`jsm.streams.info(stream).cluster.leader\`) is killed with SIGKILL; the test waits for
another node to take the leadership, brings the killed node back and waits until every
replica is current. A live subscriber (the feed) follows throughout, and one in namespace
feed mode; the new leader's election advisory makes them read the journal from their
last sequence, which covers what the old leader stored but never republished. Sends are counted per
\`Nats-Msg-Id\` on the publisher's connection, which shows how many appends were resent
during the election: every resend carries the same message id, so the stream's duplicate
window turns an append whose first copy was stored into a duplicate ack, not a second
message.

Asserted: zero acknowledged events lost; the stream's message count equals the number of
published events and no event id occurs twice; the live subscriber sees each exactly
once; the leadership moved; the replicas are current afterwards.`,
    notes: `Runs only in the \`integration-newest\` project: a cluster start, a leader election and a
catch-up take 15–30 s on the 2-core CI machine, twice that with 2.10. Run it against the
oldest server with \`JETLOOP_NATS_SERVER=oldest npx tsx scripts/reliability-soak.ts --only leader-kill\`.

Found by this scenario on docker-compose.yml (CI, 2026-12-01): the namespace-feed subscriber
lost 186 of 300 events after the killed leader came back. Its repair read the journal through
a consumer the server had placed on that node while it was still catching up, which counted
only what it held, so the read ended early and the rest was taken as gone. Every journal read
now keeps its consumer only on the stream leader (src/journal/read-placement.ts;
test/integration/read-placement.test.ts measures the catch-up case).`,
  },
  "2b-shard-leader-kill": {
    title: "2b. One shard's leader killed under load (3 shards, replicas 3)",
    method: `A three-node cluster from deploy/nats/cluster.conf; the namespace is provisioned with
\`shards: 3\` and replicas 3, so its journal is three streams (\`{stream}_k_of_3\`), each a
Raft group of its own. \`provision\` spreads the three leaders over the three servers
(step-downs asking for a preferred successor on 2.11+, random re-elections in bounded
rounds on 2.10); the test checks that \`provision\`, \`provision({ mode: "verify" })\` and
the CLI's \`provision --verify\` all report three different leaders. Each shard has four
sessions and a producer of its own (8 appends in flight, paced, ack timeout 1 s, deadline
30 s): one producer for all would stall every shard behind the killed one, which is the
test's doing, not the bus's (the bus has one writer per shard). After a quarter of the
appends, the leader of a shard is killed with SIGKILL — a shard led by a server the
producers' connection is not on, so what is measured is one shard's election and not also
the client's reconnect, which pauses every shard alike. The node comes back and every
shard's replicas catch up. Per shard: a live subscription of one of its sessions follows
throughout; afterwards each of its sessions is replayed, and its stream is read directly
(not through jetloop) and compared with the event ids its producer handed in; an id of
another shard in it counts as "unexpected".

Namespace-wide readers, over every shard at once, are compared with what the three
streams hold: two live subscriptions of every session from the start (\`start: "all"\`),
one per feed mode (\`loop\`, \`namespace\`); a durable of every session that acknowledges
each delivery before taking the next (ack wait 2 s, one delivery outstanding per shard:
with more, a plain durable redelivers what a closed subscription had pulled but not
handed behind newer events of the same session), closed at the kill and opened again
under its name right after, while the shard elects (a refusal, typed, is retried);
after the run, a live subscription started \`{ after }\` the positions the loop-feed one
had when the kill began. The HTTP gateway runs in the process on the same
bus (its default feed mode, \`namespace\`): at the kill an SSE stream of the first
session of each shard opens from its beginning (\`last_event_id=0\`) and stays open
through the kill; afterwards the session's journal page (\`limit=1000\`) and status are
read. That session's last event is a TurnStarted, published after the kill, so the status
must show it at that event's sequence. The readers' steps at the kill run beside it,
not delaying it. "Out of order" counts, per session, first deliveries whose journal sequence
is not above the one before; "wrong shard", deliveries whose \`shard\` is not their
session's.

Asserted, per shard: every append settles, none untyped; the stream holds exactly the
shard's published events, each once, none of another shard; the live subscriber and the
replays get every event of their sessions once, in journal order; the killed shard's
stall (its longest gap between two acks) is over half a second, and each other shard
acknowledges appends during it; the leadership moved; the replicas are current afterwards.
Asserted of the namespace-wide readers: each gets every event of the namespace (the
resumed one every event past its positions) exactly once, in journal order per session,
each delivery naming its session's shard; the live ones' \`positions()\` end at every
shard's last sequence; the durable ends without an error; the gateway's SSE streams and
journal pages hold every event of their sessions once, in order, and each status's
\`last_journal_seq\` is its TurnStarted's sequence.`,
    notes: `Runs in \`integration-newest\` (a cluster per file; see scenario 2). On 2.10 with
\`JETLOOP_NATS_SERVER=oldest npx tsx scripts/reliability-soak.ts --only shard-leader-kill\`.
A durable opened while a server is down reads its consumers on the shard streams and its
replay consumer on the parked store, a stream with a leader of its own: while one of them
has no leader the open fails (\`SUBSCRIPTION_FAILED\`, after the JetStream request
timeout) and a retry after the election succeeds ("reopen refusals"; the fact "parked
store led by the killed server" says whether the parked store's leader was the one
killed). Opened, it resumes from each shard's ack floor and loses nothing.

Found by this scenario (2026-12-02): the durable reopened during the election got 400, 5
and 4 of the three shards' 400 events, with no error — the healthy shards starved. An open
that failed on one shard (the refusals above) stopped the other shards' parts while they
were still starting; they finished starting after their stop and consumed on with no
reader, taking those shards' deliveries (one outstanding at a time) from the subscription
opened next. A failed start of a sharded source now stops every part once each part's own
start has settled (src/sources/sharded-source.ts; test/unit/sharded-source.test.ts).`,
  },
  "3-client-cutoff": {
    title: "3. Client cut off (server frozen with SIGSTOP), then resumed",
    method: `The client connects with a short ping interval and two outstanding pings (through
\`natsOptions\`), so a silent server is declared stale within about a second. Mid-load
the server is frozen with SIGSTOP for longer than that and longer than the bus's publish
deadline, then resumed with SIGCONT. Appends keep starting during the freeze (up to 512
in flight). Each append must settle by its deadline: acknowledged (once), or failed with
a typed error (\`PublishTimeoutError\`, whose message says the event may or may not be
stored, and when publishing it again stores it at most once: within the duplicate window,
or at any delay through \`publishAll\` with \`resume\` — scenario 11). Before the failed ones are published again, the stream is read to count how many
of them were stored anyway — the ambiguity the error describes. A live subscriber
must resume and receive what was appended after the resume.

Asserted: no append left unsettled past its deadline, none failed untyped; every
acknowledged event is in the stream exactly once; after republishing the failed ones the
stream holds the published set exactly once; the subscriber got everything, including
every event appended after the resume, without duplicates.`,
  },
  "4-consumer-crash": {
    title: "4. Durable consumer process killed (SIGKILL) mid-batch, restarted",
    method: `A separate Node process (test/harness/reliability/durable-consumer-child.ts) consumes a
durable consumer (batch 16, ack wait 2 s): per delivery it works a few milliseconds,
appends \`seq id deliveryCount\` to a file with a synchronous write, then acknowledges —
at-least-once processing. The journal already holds all events. Once the process has
recorded a third or so, it is killed with SIGKILL; the consumer's ack floor is read from
the server; a second process with the same durable name runs until the consumer has
nothing pending and nothing unacknowledged.

Asserted: the two files together hold every published event (nothing lost); the second
process never receives a sequence at or below the ack floor at the kill (it resumes from
the floor, not from the start); events recorded but not acknowledged before the kill come
again (counted as duplicates), which is what at-least-once means.`,
    notes: `The "delivered but unacked at the kill" figure is the client's read-ahead: the pull batch
plus the subscription's enduring buffer (256). Their ack-wait clocks run while they wait
(DESIGN.md §9), and jetloop extends them automatically while they are held; after the
kill the server redelivers them once the ack wait passes.`,
  },
  "5-slow-consumer": {
    title: "5. Slow consumer under a burst",
    method: `A subscriber follows previews (ephemeral) and the journal (enduring) with an ephemeral
buffer of 256 and does not read at all while a producer sends a burst of previews
interleaved with journal appends; only then does it read everything. The heap is measured
after a full garbage collection before the burst and again with the burst delivered and
the reader still stalled; it is also sampled (garbage included) throughout.

Asserted: every journal event is delivered (pull-based flow control keeps the rest on
the server) with no duplicates; every preview is either delivered or counted in
\`stats().dropped\` — none unaccounted for; the server reports no slow consumer; the
retained heap stays within a few MiB, far below the burst.`,
  },
  "6-bad-input": {
    title: "6. Bad input at every boundary",
    method: `Malformed messages, invalid by construction, are injected raw — into the stream with a
plain JetStream publish and onto live subjects with a core publish — between valid
events: random bytes, truncated JSON, invalid UTF-8, a BOM, empty payloads, non-objects,
duplicate keys, unknown types, a missing type, a wrong schema version, a grant token or
raw arguments smuggled into the strict permission request, nesting past the depth cap,
invalid UUIDs, an event of another session or loop on a subject, an ephemeral event in
the journal and an enduring one on a live subject, and messages over the reader's byte
cap (the stream itself accepts them). Two further kinds are valid events with an extra
envelope key (\`arguments\`, \`extra_N\`): the decoder ignores unknown envelope keys by
design (as the Go runtime does), so they are delivered — without the key. Each kind is
sent several times from a seeded generator. An ordered, a durable and a live subscriber
and a replay read it all. Then bad calls at the API boundaries: ids carrying subject
tokens (\`.\`, \`*\`, \`>\`, whitespace, upper case, look-alike digits) into
createEvent, publish, bus.session, subscription filters, replay and the subject
builders; namespaces with wildcards; invalid filters and subscription options; oversize
appends.

Asserted: each subscriber yields exactly the valid events; every malformed message is
reported with a typed error (the durable one terminates it: nothing is redelivered);
no yielded event carries an unknown key or a secret; every bad call gets a typed error
(none accepted, none untyped) and no refused subscription leaves a consumer behind; no
uncaught exception or unhandled rejection. The decoders themselves are fuzzed in the unit
suite (test/unit/fuzz.test.ts) with the fixed budget quoted in the facts.`,
  },
  "7-security": {
    title: "7. Per-session permissions; no secrets in payloads or logs",
    method: `The server runs deploy/nats/permissions.example.conf verbatim: \`alice\` and \`bob\` may each
follow only their own session (publish: stream info, the consumer-create subjects that
carry the name of one of their own pool's consumers (\`alice_0\` … \`alice_3\`) and a filter
on their session's journal, pull, info and delete on those four names only, their
session's answer subjects; subscribe: their session's preview and feed subjects and their
own inbox prefix; they connect with \`readConsumers: { prefix: "alice", size: 4 }\`, so
history and replay are pulled through their pool's consumers),
\`runtime\` writes the journal and previews, \`gateway\` may follow every session's feed
(\`{ns}.feed.>\`, namespace mode) and read the journal, \`ops\` provisions and holds a
service's durable named \`billing\` (the docs' name, easily guessed). Each follower connects with
\`natsOptions.inboxPrefix\` set to its own prefix and follows its session
(\`bus.session(id).subscribeEvents({ enduring: "all", ephemeral: "all" })\`) while the
runtime writes to both sessions. Then, through jetloop: alice follows bob's session, every
session, both sessions, bob's previews, replays bob's session, follows her own session on
the namespace feed (\`feed: "namespace"\` needs \`{ns}.feed.>\`), bob follows alice's;
alice answers a gate of bob's session, sends it input and interrupts it (his command
subjects); alice and bob append (they have no publish rights on the journal). Through the raw API as
alice: consumer creates whose configured filter differs from the one in the subject
(bob's, a wider one, \`filter_subjects\`, none), the filterless and durable creates,
get-by-sequence, direct get, consumer listing, purge, a pull from, the deletion of and the
info of the durable \`billing\`, a create on her own filter's subject naming \`billing\` (with a
free name token it would re-target it to her session), and subscriptions to the journal,
bob's previews, every inbox and bob's inbox; then \`billing\` is read.

The crossing table (test/harness/reliability/scenarios/crossings.ts): the targets are the
service durables (\`billing\` and two generated names, made by jetloop durable
subscriptions), a partitioned group's two partition durables (\`{group}_p{i}\` on the
partitioned stream), bob's four pool consumers (created by bob on his own grant), and
alice's own four pool names aimed at bob's session. For each target alice tries, on the raw
API: a create naming it on her own filter's subject (for her own pool: bob's filter in the
body), the same as an update and as a durable, a create naming it with its own filter, one
without a filter subject, the durable create, an ack of one of its deliveries, pause,
unpin, leader stepdown, consumer list and names, and (not her pool) pull, delete and info;
through jetloop: a durable subscription naming it (every session, and her session), its
figures (\`bus.consumer\`), and the parked list, replay and drop under its name. Each
target's config and creation time are read as the operator before and after. Every path
tried is listed in the facts below with how often it was refused. The gateway (on the \`gateway\`
user) runs with a per-user principal (\`authenticate\`: alice's token sees her session only):
alice's token asks for bob's status, journal page, event stream, a gate answer, input and
interrupt.

Secrets: the runtime tries to append permission requests carrying a grant token or raw
arguments (in the request, in a requirement, as a string), and a decision and a preview
with a \`grantToken\`/\`arguments\` key beside the envelope; an operator injects poison
carrying other secret markers into alice's journal and live subjects. All jetloop loggers
(pino at debug level, passed as \`logger\`) are captured; the stream is read back.

Asserted: each follower gets exactly its session's events and none of the other's; every
refusal through jetloop is a \`PermissionDeniedError\`, promptly (not a hang); every raw
attempt is refused by the permissions or by the JetStream API; every request carrying a
grant token or raw arguments is refused with a typed error, and the two extra envelope
keys are dropped (stored without them); the poison is reported, never delivered; no
secret marker appears in any log line, in any delivered event or — for the rejected
appends — anywhere in the stream; \`billing\` delivers every event once after alice's
attempts on it; in the crossing table every attempt is refused (through jetloop with a
typed error) within 2.5 s, no target's config or creation time changed (0 crossings), the
gateway answers bob's paths to alice's token 404 (the journal page: an empty page, as for
any unseen session), her own session replays before and after it, and her reads leave
none of her pool's consumers.`,
    notes: `NATS permissions match whole subject tokens only, so a consumer-name prefix ("alice-*")
cannot be granted, and a consumer create is create-or-update: a grant with a free name
token lets its holder re-target any consumer of the stream to her own filter (tried before
this wave: \`billing\` then saw only alice's session). Each follower is instead granted a
pool of literal names (\`readConsumers\`); the cost is a grant listing one create line per
pool name and followed session, and one pull/info/delete line per pool name. A read waits
for a free name up to \`readConsumers.waitMs\` (then \`READ_CONSUMERS_BUSY\`); a process
never takes over a name another process holds (consumers carry their pool's owner id), so
each process needs its own prefix. A subscription with several filter subjects (a set of
loops, or types) uses the create subject without a filter and is refused for a restricted
user: restricted followers subscribe per session with all loops, or per single filter. What
permissions cannot confine: a push consumer's deliver subject (alice can have her own
session delivered where others listen; permissions-push-attacks.test.ts shows the readers
ignore it).`,
  },
  "8-durability": {
    title: "8. Server crash right after acks: sync and storage settings",
    method: `A single server is killed with SIGKILL while appends are in flight (up to 256), right
after a given number of acknowledgements ("kill after acks"), then restarted on the same
store directory; the stream is read back and compared with what was acknowledged (in the
table, "delivered" is what the stream holds after the restart). Once with the default
fsync policy and once with \`jetstream { sync_interval: always }\` (the setting is read
back from /varz). For contrast, a memory-storage stream is acknowledged, the server
killed and restarted.

Asserted: with file storage, every acknowledged event survives the process crash, with
either setting; appends that were in flight may or may not have been stored (counted); a
memory-storage stream loses everything, which is why streams/events.json declares
\`"storage": "file"\`.`,
    notes: `**What the defaults risk.** nats-server writes every message to its file store before it
acknowledges it, but it calls fsync only every \`sync_interval\` (default 2 minutes).
Written data sits in the operating system's page cache, which survives the crash of the
nats-server process — the figures show zero loss with either setting under SIGKILL — but
not an operating-system crash or a power loss: those can lose up to \`sync_interval\` of
acknowledged appends on a single server. \`sync_interval: always\` fsyncs before every ack
and closes that window, at the throughput cost shown above. In a cluster with replicas 3
an ack means a quorum of nodes has the message, so losing one machine loses nothing; only
a correlated outage of a majority (a rack or a data-centre power cut) within the sync
interval can. Quote a duration: \`sync_interval: "2m"\`. Unquoted, \`2m\` is read as the
number 2,000,000 and the interval becomes 2,000,000 seconds (checked against both servers
through /varz).

**Not proven here:** an operating-system crash or power loss cannot be simulated on this
machine (no root, no fault-injecting block device), so the difference the setting makes
for them is stated, not measured.

Settings that make an acknowledged event survive a server crash: \`storage: file\`
(streams/events.json), replicas 3 in a cluster (\`jetloop provision\` on a clustered server),
and, for a single server or against power loss, \`sync_interval: always\` in the server's
\`jetstream\` block (or a short interval, accepting that window).`,
  },
  "9-parking": {
    title: "9. Durable handlers failing: park, SIGKILL between parking and terminating, replay",
    method: `The journal holds the events; every event whose journal sequence is a multiple of 8
fails in the handler (\`delivery.fail(error)\`), the others are acknowledged. Consumers are
separate Node processes (test/harness/reliability/parking-child.ts) on one durable with
maxDeliver 3 and a 200 ms backoff; each records what it was handed, what it acknowledged
and what it parked, with synchronous writes. First one process runs alone and kills itself
(SIGKILL) once its first parked entry is stored and acknowledged, as the original's \`+TERM\`
is about to leave (a hook on its connection's publish): after the entry is written, before
the original is terminated. Then two
processes share the durable until nothing is pending or waiting for an ack and every
failing event is parked. Then the bug is "fixed": two new processes start and
\`bus.parked.replay(durable, "all")\` (what \`jetloop parked replay --all\` runs) sends the
parked events back. "Parked" and "replayed" rows count the failing events; "delivered" is
what the store held, or what the fixed handlers acknowledged. Delivery is at least once: a
replayed entry whose acknowledgement (its removal from the store, then the ack) does not
reach the server within the replay consumer's ack wait (the durable's, 200 ms here; a
process stalled on a loaded machine) is handed over again with its delivery count up, so
"duplicated" in the replay row is the server's redeliveries, counted apart as such.

Asserted: the killed process parked one event and never terminated it; that event came
again and was parked again (\`NOT_SETTLED\`) without reaching a handler, so a handler saw
it at most maxDeliver times; every failing event is parked exactly once and no other
event is; replay sends each parked event back exactly once (one first hand-over, delivery
count 1, each), every one is acknowledged, only as a replay, and every further
acknowledgement is of a redelivery; the parked store and the durable end empty; no
published event is lost.`,
    notes: `The kill lands between the two steps because the killed process dies as the term is
about to be sent, which jetloop does only after the store acknowledged the entry. (It used
to watch its own parked subjects with a core subscription; on 2.15.1 under load the
store's ack arrived first once, and the term and the report went out before the copy.)
jetloop, not the server, counts
\`maxDeliver\` (the consumer's \`max_deliver\` is unlimited): with a server-side limit the
server would stop delivering an event whose parking failed, and it would be lost to the
durable. While a delivery is held jetloop extends its ack wait at once and then every
third of its shortest ack wait, until the settlement is confirmed; only a process that
cannot run for a whole ack wait lets it expire.`,
  },
  "10-feed-gaps": {
    title: "10. Gaps on the live feed",
    method: `Live subscriptions (\`subscribeEvents\` without \`durable\`) follow the stream's
republished feed (\`{ns}.feed.…\`) over core NATS, where a message can be missed. A private
server (max_pending 2 MB, so a client that stops reading is cut off quickly); the viewers'
bus connects through a TCP proxy. Every phase runs twice, with the viewers' bus in each
feed mode (\`feed: "loop"\`, then \`"namespace"\`). Each phase opens fresh viewers in one
process — three per loop for four loops (in loop mode sharing one feed subscription per
loop; in namespace mode all on one), one for the whole session, one for all sessions — and appends PermissionDecided events round robin over the loops and
a second session, before, during and after the fault: a test hook in the bus that drops
every 7th feed message; the proxy stops reading while 32 KiB messages flood the connection
until the server cuts it off as a slow consumer, then the client reconnects; the proxy
drops the connection mid-append. In the table, "published" counts the events each viewer
should get, summed over the viewers.

Asserted: no viewer loses or repeats an event or ends with an error; every phase's gaps
were closed from the journal (the reports say which way: \`gap\` from the sequences,
\`reconnect\`); the stream holds no consumer while the viewers follow; deliveries are in
journal order — in namespace mode in every phase, in loop mode except as noted below
(and there the loop-mode run must show late deliveries, so the test proves the
difference). A server restart and a stream leader kill are
scenarios 1 and 2 (their "live subscriber (feed)" rows); a client cut off by a frozen
server is scenario 3.`,
    notes: `**Namespace mode has no such limit.** The stream stores only \`{ns}.journal.>\` and
republishes all of it, so the one subscription on \`{ns}.feed.>\` sees contiguous
sequences: a miss shows at the very next message, whatever its subject; the bus holds the
later messages, reads the missed ones from the journal and dispatches everything in
journal order, so no viewer sees an event late.

**The limit of per-subject sequences (loop mode).** \`Nats-Last-Sequence\` is the previous sequence of the
same *journal subject*, and a subject is one event type of one loop. A missed message is
seen when its subject next speaks. A loop viewer of one event type sees that on the very
next message, so the missed event comes before it, in order. A view over many subjects
(the whole session, all sessions, a loop with several event types) may have yielded events
of other subjects by then: the missed event still comes exactly once, but late ("out of
order" in the table). The feed loses messages for real only with a reconnect (a slow
consumer is disconnected, not thinned out; a restart; a network cut) or a leader change,
and both make every viewer read the journal from its last sequence before taking the feed
again, which keeps the order; the hook's silent drops, or a route between cluster nodes
that flaps, are the case above.`,
  },
  "11-producer-crash": {
    title: "11. Producer killed (SIGKILL) mid-publish, restarted after the duplicate window",
    method: `The events stream is provisioned with a short duplicate window (\`provision --duplicate-window 3s\`;
the producers' publish deadline, 2 s, fits in it). A producer process appends a fixed list
of events and is killed with SIGKILL once the journal holds a few hundred of them; it is
started again with the same list only after the window has passed, when the stream no
longer recognises a resent message id. Two producers side by side, each on a namespace of its own:
*unfenced*, one \`publishAll\` over three sessions (64 in flight), resumed with
\`publishAll(events, { resume: { since } })\` where \`since\` is a time before the first
attempt — the journal is read per session from then (headers only) and only what it lacks is
published; *fenced*, one session, each event appended with \`expectedLastSeq\` set to the
sequence of the one before, resumed by walking the chain again from 0 — a stored event is
refused by its fence and found behind it (\`duplicate: true\` with its sequence), which fences the next. The
journal is then read raw (not through jetloop) and each event id counted.

Asserted: the kill came mid-publish (some stored, not all); the restart came after the
window; the resumed run reported at least what was stored at the kill as already stored;
the journal holds every event exactly once — 0 duplicated, 0 lost. The fenced producer
needs nats-server 2.11 (fencing): on 2.10 only the unfenced one runs.`,
    notes: `Without \`resume\`, the same restart stores a second copy of everything the first run had
stored, acknowledged \`duplicate: false\` (test/integration/exactly-once.test.ts shows the
resend past the window stored twice). \`resume\` is exact once the earlier attempt has ended
(its process gone, or its appends settled): an append still in flight could land after the
read. Its cost is one ordered consumer per session, reading message headers from \`since\`.`,
  },
  "12-browser-boundary": {
    title: "12. Browser boundary: another origin and a rebinding page against a default gateway",
    method: `A default gateway (loopback, no token, no allowlist) holds a pending permission gate
served by \`serveGates\`. Headless Chromium (Debian's chromium through playwright-core) opens
a page from a second local HTTP server (\`http://localhost:<other port>\`, another origin)
and, as that page's own script, tries to approve the gate: a no-cors \`fetch\` POST with
\`text/plain\`, a \`fetch\` POST with \`application/json\` (which needs a preflight), an
auto-submitted \`text/plain\` form whose field is shaped as the JSON body, and
\`navigator.sendBeacon\`; and to read \`/v1/sessions\`. Then a DNS-rebinding page: Chromium
resolves \`rebind.test\` to 127.0.0.1 (\`--host-resolver-rules\`), opens
\`http://rebind.test:<gateway port>/v1/sessions\` and posts the approval as JSON from that
page, which is same-origin to itself. The statuses are recorded on the gateway's side
(preflights and favicon requests included). Afterwards the gateway's own page opens the
session and clicks Approve, and a second gateway with the other origin in
\`allowedOrigins\` is read from that page and sent a preflight.

Asserted: every attempt reached the gateway and every answer was 403 (the row counts the
attempts and those answered otherwise, which must be 0); the page saw only an opaque reply
or a rejected fetch; the gate was still open afterwards and the loop had received
nothing; the own page loaded (200) and its Approve reached the loop (\`approve\`); the
allowlisted origin read the list (200) and its preflight passed (204).`,
    notes: `The families of \`Host\`, \`Origin\` and \`Content-Type\` values behind these checks
(case, ports, trailing dots, IPv6 forms, \`null\`, userinfo, missing headers) are generated
in test/unit/gateway-boundary.test.ts; the model is in src/gateway/README.md ("The browser
boundary").`,
  },
  "13-answer-path": {
    title: "13. The answer path under pressure",
    method: `On the suite's server, one loop actor's bus (events capped at 4 KiB) and a second
connection answer gates as an adversary would. Raced gates: N permission gates, each
answered at once by three answerers on the two connections (approve, deny, approve).
Timeouts racing answers: the same with a 400 ms timeout and the answers sent at a random
point of it. Repeats: one gate, N answers with one command id, all in flight at once,
from both connections. Oversized: an answer whose reason makes PermissionDecided exceed the
cap, to a gate with a 1.5 s timeout. Close: N gates (permission and input) pending when
\`GateServer.close()\` runs, and three when \`bus.close()\` runs. Cross-loop: a writer on loop
2's subjects journals a GateResolved naming loop 1's open gate. Killed actor: a child
process opens a gate and is killed with SIGKILL; a successor starts with
\`serveGates(…, { closeOrphans: true })\`, asks again, and the new gate is approved. The
journal is read back through replay; the tool activity projection is rebuilt from it.

Asserted: each raced gate has exactly one accepted answer, one GateResolved and one
PermissionDecided, every loser is told GATE_RESOLVED, and the loop's decision equals the
journal's; each gate racing its timeout has exactly one outcome, every other answer
GATE_RESOLVED; every repeat of the command id gets the first outcome (one of them not
marked duplicate) and one GateResolved is written; the oversized answer is refused
(COMMAND_FAILED) with nothing journaled and the gate's timer still fires on time (one
GateResolved, one PermissionDecided, by policy); every pending request settles with
GateClosedError and each gate is journaled \`owner_closed\`; the forged resolution is not
applied (the call stays \`awaiting_approval\`), is reported as a violation, and the loop
actor still takes a real answer; an answer to the killed actor is COMMAND_NO_LISTENER, its
successor closes the gate \`abandoned\`, and the re-asked call ends \`approved\`.`,
    notes: `A failure after GateResolved is written (its PermissionDecided fails three times) is not
produced here: it needs the journal to fail between two appends. The rules for it are
fuzzed in test/unit/gate-rules.property.test.ts (the gate stays resolved, denied, and the
loop actor gets ResolutionIncompleteError). \`closeOrphans\` refuses when an actor still
answers on the loop's command subject; two actors starting at once for one loop are not
detected.`,
  },
  "14-partitioned-group": {
    title: "14. Partitioned durable group: a member SIGKILLed and one added mid-run",
    method: `Three member processes (test/harness/reliability/group-member-child.ts) join one
partitioned durable group (\`group: { leaseMs: 1000 }\`, ack wait 1.5 s) over a namespace
provisioned with 12 partitions; a fourth process is started too but joins only on a signal.
The suite's size is 60 sessions × 20 events (\`npm run reliability:soak -- --only partitioned-group\`
runs the issue's 200 × 50), published in rounds of one event per session. Each member hands
every delivery to its handler at once (the group keeps one delivery outstanding per
partition); a handler records its start, works 0-4 ms at random, records its end, then
acknowledges. Once a third of the events are done, one member is killed with SIGKILL and
the fourth joins. Every member records the partitions it owns when they change.

Asserted: every published event handled (nothing lost, nothing unexpected); no handling of
an event began before every earlier event of its session had ended once (across all four
processes, by the machine's clock); every duplicate is an event the killed member had
started, and there are at most as many as the partitions it owned (one outstanding each);
the added member handled events; the killed member's partitions were owned by live members
again within two lease times of the kill.`,
    notes: `Order holds by the server, not by the membership: each partition's consumer has
\`max_ack_pending: 1\`, so while two members pull one partition during a move, the next event
is delivered only after the previous one is acknowledged (or its ack wait runs out, for a
killed member). The move time is the lease (the killed member's lease goes stale), plus up
to a third of it (the next check), plus the new owner's consumer start; the first event of a
moved partition can wait for the killed member's unsettled delivery's ack wait.`,
  },
  "15-megabyte-events": {
    title: "15. Events at the size limit on a shared connection",
    method: `\`scripts/megabyte-events.ts\` (run \`soak-*\`): a private nats-server with its defaults
(max_payload 1 MB, max_pending 64 MB) holds 300 events of one session at the size limit
(the largest encoded event the bus publishes, ~1 MB). On the gateway's own connection,
which 100 SSE viewers of another session share, the session is replayed (\`replay\`, default
options) and then paged through the gateway at \`limit=1000\` until \`done\`. After each,
an event is published to the viewers' session and each viewer must receive it; the
connection's status is watched for a disconnect or a slow-consumer cut. The suite's lean
version, \`test/integration/megabyte-events.test.ts\`, reads 32 such events on every read
path (replay, feed history, durable, group member, journal pages, SSE resumed from 0) on a
server whose max_pending is 24 MB, with the same viewers' check after each.

Asserted: every event read once on each path, the connection never cut, every viewer
still receiving.`,
    notes: `Before every pull was bounded in bytes (src/journal/pull-size.ts: at most 8 MiB, at least
one message of the connection's max_payload), a replay pulled 512 events at once: 300 events
of 1 MB gave 99 in 30 s while the server cut the connection as a slow consumer again and
again, and one page at \`limit=1000\` cut the gateway's connection for every viewer. Pages are
now streamed and end at \`maxPageBytes\` (16 MiB) with \`done:false\` (src/gateway/README.md).
The bound is per pull: many megabyte reads at once on one connection can still owe it more
than max_pending together.`,
  },
  "16-header-flood": {
    title: "16. A header flood before authentication",
    method: `\`test/integration/gateway/header-flood.test.ts\`: \`jetloop gateway\` runs as its own process
(token auth, default caps). From four loopback source addresses (127.0.0.2 to 127.0.0.5),
128 connections each (the per-address cap) send a request line and then headers of almost
1 MiB that never end, and open a new connection 10 ms after the gateway closes one, for
4 s. Meanwhile an authenticated client asks for a session's status again and again, and an
authenticated SSE stream is open; at the end an event is published and the stream must
deliver it. The gateway's resident memory is sampled every 100 ms from /proc.

Asserted: every authenticated request answered 200, the SSE stream delivered the event,
the flood's connections were cut by the gateway, and the gateway grew by less than 76 MiB
(from the compiled gateway's 74 MiB at rest, under 150 MiB).`,
    notes: `Before the caps (headers read up to 1 MiB, Go's MaxHeaderBytes), the same flood took the
gateway from 118 to 684 MiB, holding every connection's headers. Now headers are capped at
16 KiB (\`maxHeaderBytes\`, 431), connections at 128 per address and 1024 in all
(\`maxConnections\`, 503), and the time to send headers at 5 s (\`headersTimeoutMs\`): at most
1024 × (16 KiB + Node's 64 KiB read buffer) held before authentication. The test's gateway
runs under tsx, which rests at ~120 MiB: the bound asserted is the growth. The answers'
latency under the flood on a loaded two-core machine was 0.1 to 3 s (the flood's client
runs in the same machine).`,
  },
  "17-session-list": {
    title: "17. The session list over 10,000 sessions (the session catalog)",
    method: `\`npx tsx scripts/session-list-figures.ts\` on a nats-server process of its own: 10,000
sessions made fast (a SessionStarted each, published pipelined; a third also a TurnStarted
at distinct times, so the order has something to sort), then a gateway. Its first list opens
the session catalog (src/catalog/README.md) and folds every record into it; then the whole
list is paged by 1000 and compared with the expected order (last activity descending, then
session id), 200 pages of 20 at spread skips are timed one at a time, each compared with its
slice, and, after 300 more sessions, 5 lists run at once while the server's consumer
advisories (created, deleted) for the journal and the catalog's bucket are counted: the peak
open at once, not a sample. The suite's lean version is
\`test/integration/session-catalog.test.ts\` (10,000 sessions paged; consumers of 5
concurrent lists with 50 entries spoiled, so the update also folds sessions again; the list
against a full fold after a generated run with concurrent and killed updaters, replayed
updates and a server restart); \`test/integration/catalog-isolation.test.ts\` puts one hostile
session beside honest ones: the measured attack (12,500 gates, on a default server),
generated gate floods with long titles (a 64 KiB max_payload server), and, on a 4 KiB
max_payload server, an entry the server cannot hold, poison records or forged headers.

Asserted by the suite: the list equals a full fold of every journal; every session once in
Go's order; an update offered every record again writes nothing (each entry keeps its
revision); a gateway's lists open at most 1 + S + 1 consumers (the index's watch, one read
per shard, one refold at a time) however many run at once; every entry stays under
\`ENTRY_MAX_BYTES\` (8 KiB) whatever one session stores; a session whose entry cannot be its
fold is listed marked while the honest sessions equal a full fold, the checkpoints reach the
journal's end, a session stored after it is read alone, and \`jetloop catalog rebuild\` exits
1 naming it.`,
    notes: `Before the catalog, the list folded every session's journal on every request, one consumer
per session, all at once: 300 sessions and 5 concurrent lists opened about 1,000 consumers
and lists failed with 500; past about 1,000 sessions the list failed alone on 2.15.1. The
first list after a backlog pays the fold of that backlog once (here every record of the
10,000 sessions: 10,000 entries created, one compare-and-set each); later lists fold only
what was stored since the previous one. The recorded runs shared 2 cores with six other
test processes: the p99 and max of a page are that load's (the p50 is the page's cost).
Before entries were bounded, a session of about 12,500 gates made its entry pass the
server's max_payload: its write failed on every update, so it was never listed, the
checkpoints never moved (each update read everything stored since, again) and \`jetloop
catalog rebuild\` exited 0. Now the fold keeps at most 48 gates (the largest entry is 6,503
bytes), and a session that still cannot be written is marked and costs only itself.`,
  },
  "18-forged-headers": {
    title: "18. Forged headers on one session beside honest ones",
    method: `A journal publisher (a raw NATS connection, as the permissions example's \`runtime\`
user may) stores, on one victim session, messages carrying a header jetloop reads
(SECURITY.md's table, and the server's republish and source headers) forged to a generated
value (a size up to 1,000, 0, negative, beyond 2^53, the stream's own name, a source line,
garbage), at a generated position of a raw atomic batch of up to four messages (its commit
on the victim's session or on the attacker's own) or outside any batch, with the payload of
a poison kind of scenario 6 or a valid event; the first case is the measured attack (a turn's
first message on the victim saying 1,000, its commit on the attacker's session). Beside it
an honest session has a policy service (\`servePolicy\`, start "new"), a namespace feed
subscription, a durable and a gateway. Before any forgery a control round of the honest work
is timed: a gate decided by the policy service, a sentinel delivered to the feed and the
durable (awaited), the session's replay, a namespace replay, and the gateway's status,
journal page, session list and SSE stream (up to the sentinel). After each forgery: the
victim's replay, its gateway status, a namespace replay, then the honest round again.
(test/integration/reliability/forged-headers.test.ts, seeded.)

Asserted: the victim's replay ends (never fails) and its status answers 200; each part of the
honest round, and the namespace replay after the forgery, stays under three times its
control plus 3 s; every sentinel reaches the feed once and the durable; on 2.12+ the forged
size is reported as \`TurnUnheldError\` poison.`,
    notes: `Before the fix the first case failed the victim's replay after 16 s, and every read that
met the claim (the gateway's session list, status and journal page, feed histories) waited
with it. Now a read that meets a claimed turn end holds the batch's messages back and reads
what the stream stores, ending the turn at its commit or at a message not of its batch; the
victim's reads pay about a second (two polls without growth) when the claim is false.`,
  },
  "19-attach": {
    title: "19. Attaching a Go runtime's session store under faults",
    method: `\`jetloop attach --go-store\` (src/attach/) follows the sessions a Go runtime writes
through looprig/natsstore into a jetloop namespace. The Go side is the recording of the Go
runtime's own store (test/conformance/data/natsstore/) loaded into a real nats-server as
recorded, and records appended after it as natsstore appends them (test/harness/natsstore.ts,
checked first against the recording). Each row is one fault, driven by its own test file
(attach-kill, attach-go-store, attach-many, attach-lease); the counts are per Go record:
"published" the Go events written, "delivered" the events in jetloop's journal, "lost" the
Go events missing there, "duplicated" a Go record appended more than once; out of Go's
order and parked records in the further counts. Every journal event is also compared with
its Go bytes (none differs in any row).

Asserted: no Go event missing, none appended twice, none out of Go's order, every event
byte for byte; a record Go's reader refuses is parked, never appended and never skipped
silently, and costs only its session; a standby under a lease appends nothing and takes
over within its bound.`,
    notes: `The live parts over the runtime's HTTP surface (answers forwarded, previews) under a
hung, a stopped and a gate-timing-out runtime are measured in test/integration/attach-http.test.ts
(docs/go-interop.md): a hung runtime's answer is told to repeat within its request bound
(600 ms in the test, 864 ms with the one-actor check) while an honest session beside it is
answered in milliseconds; a stopped one's in about 270 ms, 503 retryable; a gate the
runtime times out is resolved once, the caller told which.`,
  },
};

function cell(v: string | number | boolean | null | undefined): string {
  if (v === null || v === undefined) return "—";
  return String(v).replaceAll("|", "\\|").replaceAll("\n", " ");
}

function notesOf(r: FigureRow): string {
  return Object.entries(r.notes ?? {})
    .map(([k, v]) => `${k}: ${cell(v)}`)
    .join("; ");
}

const RUN_ORDER = ["newest", "oldest", "external"];

function runRank(run: string): number {
  const i = RUN_ORDER.indexOf(run);
  return i === -1 ? RUN_ORDER.length + (run.startsWith("soak") ? 0 : 1) : i;
}

function sortRecords(records: ScenarioRecord[]): ScenarioRecord[] {
  return [...records].sort((a, b) => runRank(a.run) - runRank(b.run) || a.run.localeCompare(b.run));
}

/** The figures table of some runs of one scenario (Markdown). */
export function figuresTable(records: readonly ScenarioRecord[]): string {
  const out = ["| run | server | counted | published | delivered | lost | duplicated | further counts |", "|---|---|---|---:|---:|---:|---:|---|"];
  for (const rec of records) {
    for (const r of rec.rows) {
      const lost = r.expectedLoss ? `${cell(r.lost)} (expected)` : cell(r.lost);
      out.push(`| ${cell(rec.run)} | ${cell(rec.serverVersion)} | ${cell(r.what)} | ${r.published} | ${r.delivered} | ${lost} | ${r.duplicated} | ${notesOf(r)} |`);
    }
  }
  return out.join("\n");
}

/** The facts of some runs of one scenario, one column per run (Markdown). */
export function factsTable(records: readonly ScenarioRecord[]): string {
  const keys = [...new Set(records.flatMap((r) => Object.keys(r.facts ?? {})))];
  const out = [`| fact | ${records.map((r) => cell(r.run)).join(" | ")} |`, `|---|${records.map(() => "---").join("|")}|`];
  for (const k of keys) out.push(`| ${cell(k)} | ${records.map((r) => cell(r.facts?.[k])).join(" | ")} |`);
  out.push(`| duration (s) | ${records.map((r) => (r.durationMs / 1000).toFixed(1)).join(" | ")} |`);
  out.push(`| recorded | ${records.map((r) => r.finishedAt.slice(0, 16).replace("T", " ")).join(" | ")} |`);
  return out.join("\n");
}

export function scenarioSection(id: string, text: ScenarioText | undefined = SCENARIOS[id], records: ScenarioRecord[] = []): string {
  const title = text?.title ?? records[0]?.title ?? id;
  const out: string[] = [`## ${title}`, ""];
  if (text) out.push(text.method, "");
  if (records.length === 0) out.push("_No figures recorded yet: run the suite._", "");
  else out.push(figuresTable(records), "", factsTable(records), "");
  if (text?.notes) out.push(text.notes, "");
  return out.join("\n");
}

function summary(byId: Map<string, ScenarioRecord[]>): string {
  const out = ["| scenario | run | server | events published | lost | duplicated in the journal |", "|---|---|---|---:|---:|---:|"];
  for (const [id, records] of byId) {
    for (const rec of records) {
      const lost = rec.rows.filter((r) => !r.expectedLoss).reduce((n, r) => n + (r.lost ?? 0), 0);
      // A scenario over several journals (shards) has a journal row for each: summed.
      const journals = rec.rows.filter((r) => r.what.startsWith("journal"));
      const published = journals.length > 1 ? journals.reduce((n, r) => n + r.published, 0) : Math.max(0, ...rec.rows.map((r) => r.published));
      const duplicated = journals.length > 0 ? String(journals.reduce((n, r) => n + r.duplicated, 0)) : "—";
      out.push(`| ${cell(SCENARIOS[id]?.title ?? rec.title)} | ${cell(rec.run)} | ${cell(rec.serverVersion)} | ${published} | ${lost} | ${duplicated} |`);
    }
  }
  return out.join("\n");
}

/** The parts of one scenario's run (`part`: several test files) joined into one record, rows in part order. */
export function joinParts(records: readonly ScenarioRecord[]): ScenarioRecord[] {
  const whole = new Map<string, ScenarioRecord[]>();
  for (const r of records) {
    const key = `${r.id}\u0000${r.run}`;
    whole.set(key, [...(whole.get(key) ?? []), r]);
  }
  return [...whole.values()].map((parts) => {
    if (parts.length === 1 && parts[0]!.part === undefined) return parts[0]!;
    const sorted = [...parts].sort((a, b) => (a.part ?? "").localeCompare(b.part ?? ""));
    const { part: _part, ...first } = sorted[0]!;
    return {
      ...first,
      finishedAt: sorted.reduce((m, r) => (r.finishedAt > m ? r.finishedAt : m), ""),
      durationMs: sorted.reduce((n, r) => n + r.durationMs, 0),
      rows: sorted.flatMap((r) => r.rows),
      facts: Object.assign({}, ...sorted.map((r) => r.facts ?? {})) as Record<string, number | string | boolean>,
    };
  });
}

/** The report as Markdown, from the records under `dir`. */
export function renderReliabilityMarkdown(dir: string = FIGURES_DIR): string {
  const records = joinParts(readScenarioRecords(dir));
  const ids = [...new Set([...Object.keys(SCENARIOS), ...records.map((r) => r.id)])].sort((a, b) => parseInt(a) - parseInt(b) || a.localeCompare(b));
  const byId = new Map<string, ScenarioRecord[]>();
  for (const id of ids) byId.set(id, sortRecords(records.filter((r) => r.id === id)));
  const runs = [...new Set(records.map((r) => r.run))].sort((a, b) => runRank(a) - runRank(b));
  const latest = records.reduce((m, r) => (r.finishedAt > m ? r.finishedAt : m), "");
  return [
    "# Reliability and security: the figures",
    "",
    "<!-- Generated by scripts/reliability-report.ts from .bench-out/reliability/; do not edit by hand. -->",
    "",
    "Each scenario below runs against real nats-server processes (never a mock), counts what",
    "was published, delivered, lost and duplicated, and asserts the promise it names. The",
    "figures are those of the latest run of each scenario in each run label: `newest` and",
    "`oldest` are the two integration projects (nats-server 2.15 and 2.10), `soak-*` the",
    "longer runs of `scripts/reliability-soak.ts`. \"Lost\" counts published events that",
    "never arrived where the scenario promises they must; \"—\" where a row makes no such",
    "promise (one of two consumer processes, say). \"Duplicated\" counts deliveries beyond",
    "the first of an event id.",
    "",
    "```sh",
    'npx vitest run --project "integration-*" test/integration/reliability/   # the scenarios, both servers',
    "npx tsx scripts/reliability-soak.ts                                          # heavier load, same figures",
    "npx tsx scripts/reliability-report.ts                                        # re-render this file",
    "```",
    "",
    `Runs recorded: ${runs.length > 0 ? runs.map((r) => `\`${r}\``).join(", ") : "none yet"}${latest ? `; latest figures from ${latest.slice(0, 16).replace("T", " ")} UTC` : ""}.`,
    "",
    "## Summary",
    "",
    summary(byId),
    "",
    ...ids.map((id) => scenarioSection(id, SCENARIOS[id], byId.get(id) ?? [])),
  ].join("\n");
}

/** Writes RELIABILITY.md (atomically). */
export function writeReliabilityReport(dir: string = FIGURES_DIR, file: string = REPORT_FILE): string {
  const md = renderReliabilityMarkdown(dir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, md);
  renameSync(tmp, file);
  return file;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes("--stdout")) process.stdout.write(renderReliabilityMarkdown());
  else console.log(`wrote ${writeReliabilityReport()}`);
}
