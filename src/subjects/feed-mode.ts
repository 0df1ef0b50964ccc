import { z } from "zod";

/**
 * How a feed subscription follows the feed (feed/README.md): `loop`, a core subscription per
 * followed loop or session; `namespace`, one for the whole namespace. The bus, subscription
 * and gateway options all take it; it sits on the subjects floor (it picks the subjects a feed
 * follows) so that connection/ need not import subscribe/.
 */
export const feedModeSchema = z.enum(["loop", "namespace"]);
/** How a feed subscription follows the feed: `loop`, a core subscription per followed loop or session; `namespace`, one for the whole namespace. */
export type FeedMode = "loop" | "namespace";
