import DOMPurify from 'dompurify';
import { Marked } from 'marked';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * Markdown to HTML: marked, with images shown as their alt text (the page loads nothing from an address a document
 * names: the CSP would block it, and it would tell an outsider who reads the document).
 */
const markdown = new Marked({
  gfm: true,
  async: false,
  renderer: { image: ({ text }) => escapeHtml(`[image: ${text}]`) },
});

/** A DOMPurify of this page only (its hook must not reach other pages' sanitising). */
const purify = DOMPurify(window);
/** Links that may stay links: the web and mail. Anything else (javascript:, data:, relative) loses its href. */
const SAFE_HREF = /^(?:https?:|mailto:)/i;
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.nodeName === 'A') {
    const href = node.getAttribute('href');
    if (href === null || !SAFE_HREF.test(href.trim())) node.removeAttribute('href');
    else {
      node.setAttribute('rel', 'noopener noreferrer nofollow');
      node.setAttribute('target', '_blank');
    }
  }
});

/**
 * A document's Markdown as sanitised HTML: no script, no event handler, no inline style (the CSP forbids it), no
 * element that loads anything (images, media, frames), no form control, and links only to http(s) and mailto.
 */
export function renderMarkdown(source: string): string {
  const html = markdown.parse(source) as string;
  return purify.sanitize(html, {
    FORBID_TAGS: ['style', 'img', 'picture', 'source', 'video', 'audio', 'track', 'iframe', 'object', 'embed', 'svg', 'math', 'form', 'input', 'button', 'textarea', 'select', 'link', 'meta', 'base'],
    FORBID_ATTR: ['style', 'src', 'srcset', 'background', 'poster', 'action', 'formaction', 'xlink:href', 'ping'],
  });
}
