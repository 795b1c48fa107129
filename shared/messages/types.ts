/** The languages the API speaks. */
export type Language = 'en' | 'ja';

export type MessageParams = Record<string, string | number>;

/** Messages by key, each in every language the API speaks. */
export type Messages = Record<string, Record<Language, (params: MessageParams) => string>>;
