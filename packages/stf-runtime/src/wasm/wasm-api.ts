/** Node provides WebAssembly; the TypeScript lib here (ES2023, no DOM) does not declare it. */

/** A compiled `WebAssembly.Module` (opaque here). */
export type CompiledWasmModule = object;

/** A `WebAssembly.Memory`. */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

export interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  compile(bytes: Uint8Array): Promise<CompiledWasmModule>;
  Module: new (bytes: Uint8Array) => CompiledWasmModule;
  Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory;
}

export const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
