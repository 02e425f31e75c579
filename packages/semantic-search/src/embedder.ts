import { type Embedder, requireEmbedder } from '@wds/embeddings';

/** The configured embedder, or the 503 every embedding operation answers when the operator chose `none`. */
export class SearchEmbedder {
  constructor(readonly embedder: Embedder | null) {}

  require(): Embedder {
    return requireEmbedder(this.embedder);
  }

  /** Embeds in batches of `batch` texts. */
  async embedAll(texts: string[], batch = 64): Promise<number[][]> {
    const e = this.require();
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += batch) {
      for (const v of await e.embed(texts.slice(i, i + batch))) out.push(Array.from(v));
    }
    return out;
  }
}
