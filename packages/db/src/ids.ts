import { v7 } from 'uuid';

/** Ids are UUIDv7: time-ordered, so lists sorted by id are sorted by creation. */
export const newId = (): string => v7();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID.test(s);
