export { UploadError } from './errors.js';
export { parseJsonUpload, type JsonUpload } from './json-upload.js';
export { parseMultipartUpload, type MultipartFile, type MultipartUpload } from './multipart-upload.js';
export { type PutBytes, type ReceivedUpload, type UploadFields, receiveJsonUpload, receiveMultipartUpload } from './receive.js';
