/** LangGraph's own checkpointer validation suite, against the gateway's checkpointer. */

import { validate } from "@langchain/langgraph-checkpoint-validation";

import { GatewayCheckpointer } from "../src/langgraph.js";
import { gatewayUrls, storeOf, unique } from "./helpers.js";

for (const [backend, url] of gatewayUrls()) {
  validate({
    checkpointerName: `GatewayCheckpointer on ${backend}`,
    // Each instance in a namespace of its own: no other instance sees its checkpoints.
    createCheckpointer: () =>
      new GatewayCheckpointer({ store: storeOf(url), namespace: unique("validation") }),
  });
}
