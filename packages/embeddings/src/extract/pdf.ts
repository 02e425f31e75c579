/**
 * Text of a PDF with unpdf (a serverless build of PDF.js, runs on Node 20). Pages are separated by a blank line.
 * Returns a reason instead of text for PDFs that cannot be read: retrying would not help them.
 */
export async function pdfToText(bytes: Uint8Array): Promise<{ text: string } | { skipped: string }> {
  // Loaded on first use: PDF.js is several megabytes of JavaScript.
  const { extractText, getDocumentProxy } = await import('unpdf');
  let doc: Awaited<ReturnType<typeof getDocumentProxy>> | undefined;
  try {
    // PDF.js transfers (detaches) the buffer it is given, so it gets a copy; verbosity 0 keeps its warnings quiet.
    doc = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    const { text } = await extractText(doc, { mergePages: false });
    return { text: text.map((page) => page.trim()).filter(Boolean).join('\n\n') };
  } catch (err) {
    const name = (err as { name?: unknown } | null)?.name;
    if (name === 'PasswordException') return { skipped: 'the PDF is password-protected' };
    return { skipped: `the PDF could not be read: ${err instanceof Error ? err.message : String(err)}` };
  } finally {
    await doc?.destroy().catch(() => {});
  }
}
