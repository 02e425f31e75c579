/** A malformed upload: its message says what is wrong (the HTTP layer answers 400 with it). */
export class UploadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UploadError';
  }
}
