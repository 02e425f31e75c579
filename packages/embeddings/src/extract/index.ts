import { delimitedToText } from './csv.js';
import { decodeText } from './decode.js';
import { charsetOf, fileKind, looksLikeText } from './file-kind.js';
import { htmlToText, xmlToText } from './html.js';
import { jsonToText } from './json.js';
import { pdfToText } from './pdf.js';

export type ExtractedText = { text: string } | { skipped: string };

/**
 * The text to embed of a file. Plain text, Markdown, CSV/TSV, JSON, HTML, XML and PDF give `{ text }`; images,
 * audio, video, other binary formats and files without any text give `{ skipped: reason }`. A generic content
 * type (application/octet-stream) defers to the filename's extension, then to the bytes themselves.
 */
export async function extractText(bytes: Uint8Array, contentType: string, filename?: string): Promise<ExtractedText> {
  const kind = fileKind(contentType, filename, bytes);
  switch (kind) {
    case 'image':
      return { skipped: 'image files need a multimodal model' };
    case 'media':
      return { skipped: 'audio and video files are not embedded' };
    case 'unknown':
      return { skipped: `unsupported file type (${contentType || 'no content type'})` };
    case 'pdf':
      return nonEmpty(await pdfToText(bytes));
    case 'text':
    case 'markdown':
    case 'csv':
    case 'tsv':
    case 'json':
    case 'html':
    case 'xml': {
      // A declared text type over binary bytes (a renamed archive, say) is not worth embedding.
      if (!looksLikeText(bytes)) return { skipped: `the content is not text (declared ${contentType || 'no content type'})` };
      const text = decodeText(bytes, charsetOf(contentType));
      return nonEmpty({ text: readable(kind, text) });
    }
    default: {
      const unhandled: never = kind;
      return { skipped: `unsupported file type (${String(unhandled)})` };
    }
  }
}

function readable(kind: 'text' | 'markdown' | 'csv' | 'tsv' | 'json' | 'html' | 'xml', text: string): string {
  switch (kind) {
    case 'text':
      return text;
    case 'markdown':
      return markdownToText(text);
    case 'csv':
      return delimitedToText(text);
    case 'tsv':
      return delimitedToText(text, '\t');
    case 'json':
      try {
        return jsonToText(JSON.parse(text));
      } catch {
        return text;
      }
    case 'html':
      return htmlToText(text);
    case 'xml':
      return xmlToText(text);
  }
}

/** Markdown is readable as it is; only link and image targets are dropped, as URLs are noise to an embedder. */
function markdownToText(text: string): string {
  return text.replace(/!?\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+"[^"\n]*")?\)/g, '$1').replace(/<!--[\s\S]*?-->/g, '');
}

function nonEmpty(result: ExtractedText): ExtractedText {
  if ('text' in result && result.text.trim() === '') return { skipped: 'the file has no text' };
  return result;
}
