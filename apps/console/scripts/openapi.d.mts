export declare const here: string;
export declare const DOC_FILE: string;
export declare const TYPES_FILE: string;
export declare function serverOpenApi(): Promise<Record<string, unknown>>;
export declare function documentText(doc: unknown): string;
export declare function typesText(doc: unknown): Promise<string>;
