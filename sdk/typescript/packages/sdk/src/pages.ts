// A list method's answer: awaited, its first page (as the gateway sent
// it, `nextCursor` included); iterated with `for await`, every item of
// every page, each page fetched as the one before it runs out (as
// openai-node's lists do). Nothing is fetched until it is awaited or
// iterated; each iteration walks the pages afresh.

/** Fetches the page after `cursor` (the first when `undefined`). */
export type PageFetcher<P> = (cursor: string | undefined) => Promise<P>;

/** A list's first page when awaited; all its items when iterated. */
export class PagePromise<P, I> implements Promise<P>, AsyncIterable<I> {
  readonly [Symbol.toStringTag] = "PagePromise";
  readonly #fetch: PageFetcher<P>;
  readonly #items: (page: P) => readonly I[];
  readonly #next: (page: P) => string | null | undefined;
  #first: Promise<P> | undefined;

  constructor(fetch: PageFetcher<P>, items: (page: P) => readonly I[], next: (page: P) => string | null | undefined) {
    this.#fetch = fetch;
    this.#items = items;
    this.#next = next;
  }

  #firstPage(): Promise<P> {
    this.#first ??= this.#fetch(undefined);
    return this.#first;
  }

  then<A = P, B = never>(
    onfulfilled?: ((page: P) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.#firstPage().then(onfulfilled, onrejected);
  }

  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<P | B> {
    return this.#firstPage().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<P> {
    return this.#firstPage().finally(onfinally);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<I> {
    let page = await this.#firstPage();
    for (;;) {
      yield* this.#items(page);
      const cursor = this.#next(page);
      if (!cursor) return;
      page = await this.#fetch(cursor);
    }
  }
}
