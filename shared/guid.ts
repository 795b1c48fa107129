/** A GUID as Entra ID and `randomUUID()` write them: lower-case hex in 8-4-4-4-12 groups. */
export const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
