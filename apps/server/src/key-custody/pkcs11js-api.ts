/**
 * The part of the pkcs11js API that Pkcs11Kek uses, declared here so the server compiles
 * where the optional native package did not build (it is then refused at start only when a
 * token is configured). Names and shapes are pkcs11js 2.1's own.
 */

export type Handle = Buffer;

export interface Attribute {
  type: number;
  value?: number | boolean | string | Buffer;
}

export interface AesGCM {
  type: number;
  iv: Buffer;
  aad: Buffer;
  ivBits: number;
  tagBits: number;
}

export interface Mechanism {
  mechanism: number;
  parameter?: Buffer | AesGCM;
}

export interface PKCS11 {
  load(path: string): void;
  C_Initialize(): void;
  C_Finalize(): void;
  C_GetSlotList(tokenPresent?: boolean): Handle[];
  C_GetTokenInfo(slot: Handle): { label: string };
  C_OpenSession(slot: Handle, flags: number): Handle;
  C_CloseSession(session: Handle): void;
  C_Login(session: Handle, userType: number, pin?: string): void;
  C_FindObjectsInit(session: Handle, template: Attribute[]): void;
  C_FindObjects(session: Handle, maxObjectCount: number): Handle[];
  C_FindObjectsFinal(session: Handle): void;
  C_EncryptInit(session: Handle, mechanism: Mechanism, key: Handle): void;
  C_Encrypt(session: Handle, inData: Buffer, outData: Buffer): Buffer;
  C_DecryptInit(session: Handle, mechanism: Mechanism, key: Handle): void;
  C_Decrypt(session: Handle, inData: Buffer, outData: Buffer): Buffer;
}

/** The module's exports: the class and the constants used. */
export interface Pkcs11Lib {
  PKCS11: new () => PKCS11;
  CKF_SERIAL_SESSION: number;
  CKF_RW_SESSION: number;
  CKU_USER: number;
  CKA_CLASS: number;
  CKA_KEY_TYPE: number;
  CKA_LABEL: number;
  CKO_SECRET_KEY: number;
  CKK_AES: number;
  CKM_AES_GCM: number;
  CK_PARAMS_AES_GCM: number;
}
