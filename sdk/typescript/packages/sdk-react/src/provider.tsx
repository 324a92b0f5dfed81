// `TalonProvider` and `useTalon`: the `Talon` client the hooks below a
// provider use (given, or made from `baseUrl` and `token`), the cursor
// store they resume from, and the cache that shares one store per key
// among them. Making a `Talon` opens nothing, so a server render is safe.

import { createContext, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { Talon, type TalonOptions } from "@talon/sdk";

import { memoryCursorStore, type CursorStore } from "./cursor.js";
import { StoreCache } from "./store.js";

/** What a provider gives its hooks. */
export interface TalonContextValue {
  readonly talon: Talon;
  readonly cursorStore: CursorStore;
  readonly cache: StoreCache;
}

const TalonContext = createContext<TalonContextValue | null>(null);
TalonContext.displayName = "TalonContext";

/** Props shared by both ways of giving the client. */
interface CommonProps {
  children?: ReactNode;
  /**
   * Where hooks save the id of the last event they delivered, to resume
   * after it on their next mount (default: in memory, for this
   * provider's life). `webCursorStore()` survives a reload. Make it once
   * (at module level), not on each render.
   */
  cursorStore?: CursorStore;
}

/**
 * A provider's props: a `Talon` the app made (and closes), or the
 * options to make one (`baseUrl`, `token`, ...). Of the options, a change
 * of `baseUrl`, a string `token`, `transport`, `streams` or `streamAuth`
 * makes a new client; the others are read when it is made. A `token` function is
 * always called in its latest version.
 */
export type TalonProviderProps = CommonProps & ({ talon: Talon } | (TalonOptions & { talon?: undefined }));

/** Gives the hooks below it a Talon client. */
export function TalonProvider(props: TalonProviderProps): ReactNode {
  // The latest props, for a `token` function (called when a request is made, after a commit).
  const latest = useRef(props);
  useEffect(() => {
    latest.current = props;
  });
  const given = props.talon;
  const options = given === undefined ? (props as TalonOptions & CommonProps) : undefined;
  const tokenKey = typeof options?.token === "function" ? "function" : options?.token;
  const owned = useMemo(() => {
    if (!options) return undefined;
    const {
      children: _children,
      cursorStore: _cursorStore,
      talon: _talon,
      ...rest
    } = options as TalonOptions & CommonProps & { talon?: undefined };
    const token = rest.token;
    if (typeof token === "function") {
      rest.token = () => {
        const current = (latest.current as TalonOptions).token;
        return typeof current === "function" ? current() : (current ?? token());
      };
    }
    return new Talon(rest);
    // The client is remade only when what identifies it changes (see the props' doc).
  }, [given === undefined, options?.baseUrl, tokenKey, options?.transport, options?.streams, options?.streamAuth]);
  const talon = given ?? owned;
  // Unreachable: the provider makes a client exactly when it is given none.
  if (talon === undefined) throw new Error("TalonProvider has no client");
  useEffect(() => {
    if (!owned) return undefined;
    // A WebSocket the provider's client opened closes with the provider
    // (the client reopens one if it is used again, as under StrictMode).
    return () => void owned.close().catch(() => undefined);
  }, [owned]);
  const [defaultCursors] = useState(memoryCursorStore);
  const cursorStore = props.cursorStore ?? defaultCursors;
  const cache = useMemo(() => new StoreCache(), [talon]);
  const value = useMemo(() => ({ talon, cursorStore, cache }), [talon, cursorStore, cache]);
  return <TalonContext.Provider value={value}>{props.children}</TalonContext.Provider>;
}

/** The provider's value; throws outside a provider. */
export function useTalonContext(hook: string): TalonContextValue {
  const value = useContext(TalonContext);
  if (!value) {
    throw new Error(`${hook} must be used inside <TalonProvider> (none is above this component)`);
  }
  return value;
}

/** The `Talon` client of the nearest `TalonProvider`. */
export function useTalon(): Talon {
  return useTalonContext("useTalon").talon;
}
