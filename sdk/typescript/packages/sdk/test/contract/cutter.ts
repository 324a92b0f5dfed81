// A TCP proxy on 127.0.0.1 in front of a real gateway that cuts an event
// stream mid-run, the way a flaky network or a restarting load balancer
// would (the TypeScript twin of talon-testing's `StreamCutter`). Armed with
// `cutNextStream(n)`, the next request that is a `GET …/events` has its
// response closed right after `n` whole Server-Sent Events frames (counted
// by the blank line that ends each). Everything else is relayed untouched.
// The fake gateway injects the same fault itself (`dropStream`).

import { createConnection, createServer, type Server, type Socket } from "node:net";

export class StreamCutter {
  #armed: number | undefined;
  #done = 0;
  readonly #sockets = new Set<Socket>();

  private constructor(
    readonly url: string,
    private readonly server: Server,
  ) {}

  /** Listens on a free loopback port and relays to `target` (`http://host:port`). */
  static async start(target: string): Promise<StreamCutter> {
    const { hostname, port } = new URL(target);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("the proxy has no port");
    const cutter = new StreamCutter(`http://127.0.0.1:${address.port}`, server);
    server.on("connection", (client) => {
      cutter.#relay(client, hostname, Number(port));
    });
    return cutter;
  }

  /** Cuts the next event stream after `frames` frames. */
  cutNextStream(frames: number): void {
    this.#armed = frames;
  }

  /** How many streams were cut. */
  get cutCount(): number {
    return this.#done;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) =>
      this.server.close(() => {
        resolve();
      }),
    );
  }

  #relay(client: Socket, host: string, port: number): void {
    const server = createConnection({ host, port });
    this.#sockets.add(client).add(server);
    const end = () => {
      client.destroy();
      server.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(server);
    };
    client.setNoDelay(true);
    server.setNoDelay(true);
    // Set when this connection carries a stream request while armed: the
    // response that follows is the one to cut.
    let limit: number | undefined;
    let cut = false;
    let frames = 0;
    let last = 0;
    client.on("data", (chunk: Buffer) => {
      const line = chunk.subarray(0, 512).toString("latin1").split("\r\n", 1)[0] ?? "";
      if (line.startsWith("GET ") && line.includes("/events") && this.#armed !== undefined) {
        limit = this.#armed;
        this.#armed = undefined;
      }
      server.write(chunk);
    });
    server.on("data", (chunk: Buffer) => {
      if (cut) return;
      if (limit !== undefined) {
        for (const [i, byte] of chunk.entries()) {
          if (byte === 0x0a && last === 0x0a && ++frames === limit) {
            this.#done += 1;
            cut = true;
            client.write(chunk.subarray(0, i + 1), end);
            return;
          }
          last = byte;
        }
      }
      client.write(chunk);
    });
    client.on("close", end).on("error", end);
    server.on("close", end).on("error", end);
  }
}
