export { UploadError } from './errors.js';
export { parseJsonUpload, type JsonUpload } from './json-upload.js';
export { parseMultipartUpload, type MultipartFile, type MultipartUpload } from './multipart-upload.js';
