// @talon/sdk-testing: what an app's tests use with @talon/sdk: a real
// `talon gateway` with the mock model, started and stopped per test
// (`startGateway`), and `FakeGateway`, an in-process fake of the gateway
// for Node that plays scripted runs and injects faults.

export {
  startGateway,
  talonBinary,
  type GatewayOptions,
  type MockScript,
  type RunningGateway,
  type ScriptTurn,
} from "./gateway.js";
export { FakeGateway, type FakeGatewayOptions } from "./fake/server.js";
export { FakeRun, type Fault } from "./fake/script.js";
export { FakeTask } from "./fake/tasks.js";
export type { RecordedCall } from "./fake/state.js";
