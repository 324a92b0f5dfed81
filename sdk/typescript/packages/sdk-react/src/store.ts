// The external stores every hook reads with `useSyncExternalStore`: a
// store holds one immutable snapshot (a new object on each change, the
// same object between changes), starts its work (a stream, a fetch) on its
// first subscriber and stops it after its last one leaves. The stop waits
// for a task, so StrictMode's unsubscribe-and-subscribe-again (and a
// component that moves) keeps the one stream it has. `StoreCache` shares a
// store per key within a provider and forgets a store once it stopped.

import { useSyncExternalStore } from "react";

type Listener = () => void;

/** A snapshot, its subscribers, and the work that runs while it has any. */
export abstract class ExternalStore<S extends object> {
  #state: S;
  readonly #initial: S;
  readonly #listeners = new Set<Listener>();
  #active = false;
  #stopping: ReturnType<typeof setTimeout> | undefined;
  /** Called when the store starts and after it stopped (the cache's bookkeeping). */
  #onActive: (() => void) | undefined;
  #onIdle: (() => void) | undefined;

  constructor(initial: S) {
    this.#state = initial;
    this.#initial = initial;
  }

  /** The current snapshot (what `getSnapshot` returns). */
  readonly getSnapshot = (): S => this.#state;

  /** The initial snapshot: what the server renders, and what hydration starts from. */
  readonly getServerSnapshot = (): S => this.#initial;

  /** Adds a subscriber; the first one starts the store's work. Never called on a server. */
  readonly subscribe = (listener: Listener): (() => void) => {
    this.#listeners.add(listener);
    if (this.#stopping !== undefined) {
      clearTimeout(this.#stopping);
      this.#stopping = undefined;
    } else if (!this.#active) {
      this.#active = true;
      this.#onActive?.();
      this.start();
    }
    return () => {
      if (!this.#listeners.delete(listener) || this.#listeners.size > 0 || !this.#active) return;
      if (this.#stopping !== undefined) return;
      this.#stopping = setTimeout(() => {
        this.#stopping = undefined;
        this.#active = false;
        this.stop();
        this.#onIdle?.();
      }, 0);
    };
  };

  /** The snapshot, for the store's own code. */
  protected get state(): S {
    return this.#state;
  }

  /** Whether the store's work is on (it has subscribers, or had them a moment ago). */
  protected get active(): boolean {
    return this.#active;
  }

  /** Replaces the snapshot with a changed copy and tells the subscribers. */
  protected update(patch: Partial<S>): void {
    let changed = false;
    for (const key of Object.keys(patch) as (keyof S)[]) {
      if (!Object.is(patch[key], this.#state[key])) changed = true;
    }
    if (!changed) return;
    this.#state = { ...this.#state, ...patch };
    for (const listener of [...this.#listeners]) listener();
  }

  /** Starts the work (a stream, a fetch). */
  protected abstract start(): void;

  /** Stops it (aborts the stream); `start` may be called again later. */
  protected abstract stop(): void;

  /** @internal The cache's hooks. */
  bind(onActive: () => void, onIdle: () => void): void {
    this.#onActive = onActive;
    this.#onIdle = onIdle;
  }
}

/** One store per key, shared by the hooks of a provider that ask for it; forgotten once stopped. */
export class StoreCache {
  readonly #stores = new Map<string, ExternalStore<object>>();

  /** The store for `key`, made with `create` if there is none. */
  get<T extends ExternalStore<object>>(key: string, create: () => T): T {
    const found = this.#stores.get(key);
    if (found) return found as T;
    const store = create();
    this.#stores.set(key, store);
    store.bind(
      () => {
        // A store forgotten while a component still held it comes back on its next start.
        if (!this.#stores.has(key)) this.#stores.set(key, store);
      },
      () => {
        if (this.#stores.get(key) === store) this.#stores.delete(key);
      },
    );
    return store;
  }
}

/** A store's snapshot, read with `useSyncExternalStore`. */
export function useStore<S extends object>(store: ExternalStore<S>): S {
  return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
}
