// What the browser tests share: Debian's chromium (no browser download)
// and the flags it needs here, headless, as root, on a closed network.

export const CHROMIUM = process.env.TALON_CHROMIUM ?? "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];
