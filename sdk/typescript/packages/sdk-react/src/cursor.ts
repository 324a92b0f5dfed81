// Where the hooks keep the id of the last event they delivered, so that a
// remount (or, with `webCursorStore`, a reload) resumes after it: the
// `CursorStore` interface, an in-memory one (the default), and one over
// `sessionStorage` or `localStorage` that touches them only when called,
// and only if they exist (so a server render never does).

/** Keeps event cursors by key (`run:<runId>`, `events:<resumeKey>`). */
export interface CursorStore {
  /** The saved cursor, if any. */
  get(key: string): string | undefined | Promise<string | undefined>;
  /** Saves a cursor (the id of the last event delivered). */
  set(key: string, cursor: string): void;
  /** Forgets one (after `cursor_expired`). */
  delete?(key: string): void;
}

/** Cursors in a `Map`: they last as long as the store object. */
export function memoryCursorStore(): CursorStore {
  const cursors = new Map<string, string>();
  return {
    get: (key) => cursors.get(key),
    set: (key, cursor) => void cursors.set(key, cursor),
    delete: (key) => void cursors.delete(key),
  };
}

/** Options of {@link webCursorStore}. */
export interface WebCursorStoreOptions {
  /** `session` (the default: per tab, survives a reload) or `local` (shared by tabs, survives a restart). */
  storage?: "session" | "local";
  /** Prefix of the storage keys (default `talon:cursor:`). */
  prefix?: string;
}

/**
 * Cursors in `sessionStorage` (or `localStorage`), so that a reload
 * resumes where the page left off. Where there is no such storage (a
 * server, a worker, storage turned off), or it throws, the cursors are
 * kept in memory instead.
 */
export function webCursorStore(options: WebCursorStoreOptions = {}): CursorStore {
  const prefix = options.prefix ?? "talon:cursor:";
  const name = options.storage === "local" ? "localStorage" : "sessionStorage";
  const memory = memoryCursorStore();
  const storage = (): Storage | undefined => {
    try {
      const found = (globalThis as Record<string, unknown>)[name] as Storage | undefined;
      return found && typeof found.getItem === "function" ? found : undefined;
    } catch {
      // Reading the property throws where storage is turned off.
      return undefined;
    }
  };
  return {
    get(key) {
      try {
        const value = storage()?.getItem(prefix + key);
        if (typeof value === "string") return value;
      } catch {
        // Fall through to memory.
      }
      return memory.get(key);
    },
    set(key, cursor) {
      memory.set(key, cursor);
      try {
        storage()?.setItem(prefix + key, cursor);
      } catch {
        // A full or refused storage keeps the cursor in memory only.
      }
    },
    delete(key) {
      memory.delete?.(key);
      try {
        storage()?.removeItem(prefix + key);
      } catch {
        // Nothing to forget.
      }
    },
  };
}
