// @talon/sdk-testing: what an app's tests use with @talon/sdk. Today: a
// real `talon gateway` with the mock model, started and stopped per test.

export { startGateway, talonBinary, type GatewayOptions, type MockScript, type RunningGateway, type ScriptTurn } from "./gateway.js";
