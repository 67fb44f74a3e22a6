/* placeholder: written this session */
